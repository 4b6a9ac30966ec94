/**
 * The projection: pure functions from (event, current rows) to the rows to write. No I/O, no clock.
 * Convergence (docs/events.md) comes from comparing fact stamps per field group, so any
 * interleaving and any redelivery of the same facts yields the same rows. `evolve` hands each event
 * to the rules of its family: `order-events.ts`, `article-events.ts`, and the keys store's `../keys/api-key-events.ts`.
 */
import type { DomainEvent } from '../../schemas/events.js';
import { applyApiKeyIssued, applyApiKeyRevoked, type ApiKeyChange } from '../keys/api-key-events.js';
import type { ApiKeyRow } from '../keys/rows.js';
import { applyArticlePublished, applyArticleRemoved, type ArticleChange } from './article-events.js';
import {
  applyOrderCreated,
  applyOrderDeleted,
  applyOrderStatusChanged,
  applyOrderUpdated,
  type OrderChange,
} from './order-events.js';
import type { ArticleRow, OrderRow } from './rows.js';

export interface CurrentRows {
  order(orderId: number): OrderRow | undefined;
  article(articleId: number): ArticleRow | undefined;
  apiKey(keyId: string): ApiKeyRow | undefined;
}

export type ReadModelChange = OrderChange | ArticleChange | ApiKeyChange;

/** The change one event makes to the read model, or null when it changes nothing. */
export function evolve(event: DomainEvent, current: CurrentRows): ReadModelChange | null {
  switch (event.type) {
    case 'order.created':
      return applyOrderCreated(event, current.order(event.data.order_id));
    case 'order.updated':
      return applyOrderUpdated(event, current.order(event.data.order_id));
    case 'order.deleted':
      return applyOrderDeleted(event, current.order(event.data.order_id));
    case 'order.status_changed':
      return applyOrderStatusChanged(event, current.order(event.data.order_id));
    case 'article.published':
      return applyArticlePublished(event, current.article(event.data.article_id));
    case 'article.removed':
      return applyArticleRemoved(event, current.article(event.data.article_id));
    case 'api_key.issued':
      return applyApiKeyIssued(event, current.apiKey(event.data.key_id));
    case 'api_key.revoked':
      return applyApiKeyRevoked(event, current.apiKey(event.data.key_id));
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled event ${JSON.stringify(unhandled)}`);
    }
  }
}

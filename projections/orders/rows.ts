import type { DomainEvent } from '../../schemas/events.js';
import type { ListedStatus } from './status.js';

/** One row of `orders`: the facts seen for an order, each field group with the stamp of the fact that set it. */
export interface OrderRow {
  order_id: number;
  org_id: number | null;
  member_id: number | null;
  created_at_ms: number | null;
  /** nanoseconds of created_at within its millisecond: the listing orders by both */
  created_at_sub: number | null;
  created_v_at: number | null;
  created_v_sub: number | null;
  created_v_id: string | null;
  title: string | null;
  title_v_at: number | null;
  title_v_sub: number | null;
  title_v_id: string | null;
  distribution_ms: number | null;
  distribution_v_at: number | null;
  distribution_v_sub: number | null;
  distribution_v_id: string | null;
  status: string | null;
  status_v_at: number | null;
  status_v_sub: number | null;
  status_v_id: string | null;
  deleted_v_at: number | null;
  deleted_v_sub: number | null;
  deleted_v_id: string | null;
  listed_status: ListedStatus | null;
}

/** One row of `articles`: the latest fact about an article, a publication or a removal (tombstone). */
export interface ArticleRow {
  article_id: number;
  order_id: number;
  article_url: string | null;
  website_domain: string | null;
  published_at_ms: number | null;
  removed: 0 | 1;
  v_at: number;
  v_sub: number;
  v_rank: 0 | 1;
  v_id: string;
}

export const orderColumns = [
  'order_id',
  'org_id',
  'member_id',
  'created_at_ms',
  'created_at_sub',
  'created_v_at',
  'created_v_sub',
  'created_v_id',
  'title',
  'title_v_at',
  'title_v_sub',
  'title_v_id',
  'distribution_ms',
  'distribution_v_at',
  'distribution_v_sub',
  'distribution_v_id',
  'status',
  'status_v_at',
  'status_v_sub',
  'status_v_id',
  'deleted_v_at',
  'deleted_v_sub',
  'deleted_v_id',
  'listed_status',
] as const satisfies readonly (keyof OrderRow)[];

export const articleColumns = [
  'article_id',
  'order_id',
  'article_url',
  'website_domain',
  'published_at_ms',
  'removed',
  'v_at',
  'v_sub',
  'v_rank',
  'v_id',
] as const satisfies readonly (keyof ArticleRow)[];

/** The row an event is about: its table and key. */
export type NamedRow =
  { table: 'orders'; id: number } | { table: 'articles'; id: number } | { table: 'api_keys'; id: string };

/** The one place that says which row each event type names. */
export function rowNamedBy(event: DomainEvent): NamedRow {
  switch (event.type) {
    case 'order.created':
    case 'order.updated':
    case 'order.deleted':
    case 'order.status_changed':
      return { table: 'orders', id: event.data.order_id };
    case 'article.published':
    case 'article.removed':
      return { table: 'articles', id: event.data.article_id };
    case 'api_key.issued':
    case 'api_key.revoked':
      return { table: 'api_keys', id: event.data.key_id };
  }
}

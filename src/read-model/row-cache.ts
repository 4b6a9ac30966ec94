/**
 * The rows a batch reads and changes, held until the batch writes each once
 * (`ReadModelWriter.applyBatch`).
 */
import type { CurrentRows, ReadModelChange } from '../../projections/orders/evolve.js';
import { rowNamedBy, type ArticleRow, type OrderRow } from '../../projections/orders/rows.js';
import type { ApiKeyRow } from '../../projections/keys/rows.js';
import type { DomainEvent } from '../../schemas/events.js';

/** A row as it was before the batch (undefined: absent) and as the batch has left it so far. */
export interface BatchRow<R> {
  before: R | undefined;
  row: R | undefined;
}

/**
 * The current rows of one batch: every row its events name is read with one statement per table
 * before the first event, and each event then sees the rows the events before it left.
 */
export class BatchRows implements CurrentRows {
  readonly orders = new Map<number, BatchRow<OrderRow>>();
  readonly articles = new Map<number, BatchRow<ArticleRow>>();
  readonly apiKeys = new Map<string, BatchRow<ApiKeyRow>>();

  constructor(
    private readonly select: {
      orders: (ids: number[]) => OrderRow[];
      articles: (ids: number[]) => ArticleRow[];
      apiKeys: (ids: string[]) => ApiKeyRow[];
    },
  ) {}

  /** Reads the stored rows of every entity the events name. */
  read(events: readonly DomainEvent[]): void {
    const orderIds = new Set<number>();
    const articleIds = new Set<number>();
    const keyIds = new Set<string>();
    for (const event of events) {
      const named = rowNamedBy(event);
      if (named.table === 'orders') orderIds.add(named.id);
      else if (named.table === 'articles') articleIds.add(named.id);
      else keyIds.add(named.id);
    }
    load(this.orders, orderIds, this.select.orders, (row) => row.order_id);
    load(this.articles, articleIds, this.select.articles, (row) => row.article_id);
    load(this.apiKeys, keyIds, this.select.apiKeys, (row) => row.key_id);
  }

  order(orderId: number): OrderRow | undefined {
    return this.orders.get(orderId)?.row;
  }

  article(articleId: number): ArticleRow | undefined {
    return this.articles.get(articleId)?.row;
  }

  apiKey(keyId: string): ApiKeyRow | undefined {
    return this.apiKeys.get(keyId)?.row;
  }

  change(change: ReadModelChange): void {
    switch (change.table) {
      case 'orders':
        entry(this.orders, change.row.order_id).row = change.row;
        return;
      case 'articles':
        entry(this.articles, change.row.article_id).row = change.row;
        return;
      case 'api_keys':
        entry(this.apiKeys, change.row.key_id).row = change.row;
        return;
    }
  }

  /** The rows of a table the batch has changed, each with the row before the batch. */
  *changed<K, R>(rows: Map<K, BatchRow<R>>): Generator<{ before: R | undefined; row: R }> {
    for (const { before, row } of rows.values()) {
      if (row !== undefined && row !== before) yield { before, row };
    }
  }

  clear(): void {
    this.orders.clear();
    this.articles.clear();
    this.apiKeys.clear();
  }
}

function load<K, R>(
  rows: Map<K, BatchRow<R>>,
  ids: Set<K>,
  select: (ids: K[]) => R[],
  idOf: (row: R) => K,
): void {
  if (ids.size === 0) return;
  for (const id of ids) rows.set(id, { before: undefined, row: undefined });
  for (const row of select([...ids])) rows.set(idOf(row), { before: row, row });
}

function entry<K, R>(rows: Map<K, BatchRow<R>>, id: K): BatchRow<R> {
  const found = rows.get(id);
  if (found !== undefined) return found;
  // evolve only changes rows it was given through `order`/`article`/`apiKey`, all read beforehand
  throw new Error(`a change to a row the batch did not read: ${String(id)}`);
}

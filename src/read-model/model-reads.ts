/** What the HTTP API reads of a model, one read transaction per request (`ReadModelReader` implements it). */
import type { ListedStatus } from '../../projections/orders/status.js';
import type { Article, Order } from '../../schemas/api.js';
import type { Positions } from '../kafka/port.js';

export interface OrderPageQuery {
  orgId: number;
  status: ListedStatus | null;
  limit: number;
  /** ignored when `from` is given */
  offset: number;
  /** a keyset page: the orders just after (older than) or just before (newer than) `key`, not at `offset` */
  from?: { direction: 'after' | 'before'; key: ListingKey };
}

/**
 * Where an order stands in the listing's order (newest first: `created_at` to the nanosecond, then
 * id, both descending): what a cursor names. Only a position, never an organization's.
 */
export interface ListingKey {
  createdAtMs: number;
  /** nanoseconds of created_at within its millisecond, 0–999 999 */
  createdAtSub: number;
  orderId: number;
}

/** One page of orders, the total before paging, and where the page starts and ends in the listing. */
export interface OrderPage {
  orders: Order[];
  total: number;
  /** the keys of the first and the last order shown (null on an empty page) */
  firstKey: ListingKey | null;
  lastKey: ListingKey | null;
  /** on a keyset page: at least one more order follows in the direction read (false on an offset page) */
  more: boolean;
}

/**
 * What a model has read of its topics is the one position shape of the service (`Positions`, the
 * next offset of every partition keyed by `offsetKey`), stored in the same transaction as the
 * effects, so an answer read in one read transaction with it shows exactly the events before it.
 */
export { offsetKey, splitOffsetKey, type Positions } from '../kafka/port.js';

/** What one request reads, in one read transaction of the file (`ReadModelReader.inReadTransaction`). */
export interface ModelRead {
  /**
   * What a conditional GET /orders compares: a digest of every order the organization lists, equal
   * in every file holding the same orders (`projections/orders/digests.ts`).
   */
  orgDigest(orgId: number): string;
  /** The same for one order's articles. */
  orderDigest(orderId: number): string;
  orderPage(query: OrderPageQuery): OrderPage;
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null;
  /** The position the transaction reads; the same object while the file has not changed. */
  position(): Positions;
}

/** What the HTTP API asks of the read model. */
export interface ModelReads {
  inReadTransaction<T>(read: (model: ModelRead) => T, how?: ReadOptions): T;
  orderPage: ModelRead['orderPage'];
  articlesOfOrder: ModelRead['articlesOfOrder'];
  /**
   * Shared memory whose slot 0 moves, with `Atomics.notify`, after every commit to the model
   * answering now (`ReadModelReader.commitEpochs`): what waiting requests sleep on. Absent or null:
   * a model nothing reports commits of (a waiting request then waits its whole time).
   */
  commitEpochs?(): Int32Array | null;
}

/** What the HTTP API asks: the orders model, and the organization of an active key (`src/keys/`). */
export type ApiReads = ModelReads & { orgOfKeyHash(keySha256: string): number | null };

/** How `ReadModelReader.inReadTransaction` may answer. */
export interface ReadOptions {
  /** forget what is remembered first (a presented position the remembered one has not reached) */
  fresh?: boolean;
  /**
   * false: go to the file at once (default true: what is remembered alone is tried first). An
   * answer that reads a page cannot be given from memory; only a conditional request may be.
   */
  remembered?: boolean;
}

/** Executes the read-model queries for the API; every query is scoped by organization in SQL. */
import type { Statement } from 'better-sqlite3';
import {
  deepOffsetFrom,
  pageStart,
  type OrdersOfDay,
  type PageStart,
} from '../../projections/orders/paging.js';
import type { ListedStatus } from '../../projections/orders/status.js';
import type { Article, Order } from '../../schemas/api.js';
import { formatApiTimestamp } from './api-timestamps.js';
import type { ReadModelDatabase } from './database.js';
import { SnapshotCache, type CacheOptions } from './reader-caches.js';
import {
  fileIdentity,
  prepareReads,
  type DigestStatement,
  type ReadStatements,
} from './reader-statements.js';

/** `listOrders*` rows in raw mode: [id, title, listed_status, distribution_ms, created_at_ms] */
type OrderListRow = [number, string, ListedStatus, number | null, number];

/**
 * `articlesOfOrder` rows in raw mode: [title, article id, url, domain, published_at_ms], one per
 * article; one row with NULL article columns when the order has none.
 */
type OrderArticleRow = [string, number, string, string, number] | [string, null, null, null, null];

export interface OrderPageQuery {
  orgId: number;
  status: ListedStatus | null;
  limit: number;
  offset: number;
}

export interface ReaderOptions extends CacheOptions {
  /**
   * From this offset on, a page starts from the day holding its first order (org_order_days) instead
   * of stepping over every newer order; below it stepping the index is cheaper.
   */
  deepOffsetFrom?: number;
}

/**
 * What a model has read of its topics: the next offset of every partition, keyed by
 * `positionKey(topic, partition)`. Stored in the same transaction as the effects, so an answer read
 * in one snapshot with it shows exactly the events before it.
 */
export type ModelPosition = ReadonlyMap<string, number>;

export const positionKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** What one request reads, in one snapshot of the file (`ReadModelReader.inSnapshot`). */
export interface ModelSnapshot {
  /**
   * What a conditional GET /orders compares: a digest of every order the organization lists, equal
   * in every file holding the same orders (`projections/orders/digests.ts`).
   */
  orgDigest(orgId: number): string;
  /** The same for one order's articles. */
  orderDigest(orderId: number): string;
  orderPage(query: OrderPageQuery): { orders: Order[]; total: number };
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null;
  /** The position of the snapshot; the same object while the file has not changed. */
  position(): ModelPosition;
}

/** What the HTTP API asks of the read model. */
export type ModelReads = Pick<ReadModelReader, 'inSnapshot' | 'orderPage' | 'articlesOfOrder'>;

/** What the HTTP API asks: the orders model, and the organization of an active key (`src/keys/`). */
export type ApiReads = ModelReads & { orgOfKeyHash(keySha256: string): number | null };

/** How `ReadModelReader.inSnapshot` may answer. */
export interface SnapshotOptions {
  /** forget what is remembered first (a presented position the remembered one has not reached) */
  fresh?: boolean;
  /**
   * false: go to the file at once (default true: what is remembered alone is tried first). An
   * answer that reads a page cannot be given from memory; only a conditional request may be.
   */
  remembered?: boolean;
}

/**
 * Thrown out of a read from what is remembered at its first read of the file, and caught by
 * `inSnapshot`: one object made once, so a throw captures no stack.
 */
const needsTheFile = new Error('this read needs the file: run again in a read transaction');

export class ReadModelReader implements ModelSnapshot {
  /** the statements this file's projection version allows */
  private readonly reads: ReadStatements;
  private readonly deepOffsetFrom: number;
  /** what is remembered of the file's current snapshot (nothing unless `cacheChanges`) */
  private readonly cache: SnapshotCache;
  /** Created once: better-sqlite3 builds several wrapper functions per `transaction()` call. */
  private readonly pageInSnapshot: (query: OrderPageQuery) => { orders: Order[]; total: number };

  constructor(
    readonly db: ReadModelDatabase,
    options: ReaderOptions = {},
  ) {
    this.reads = prepareReads(db, () => this.modelIdentity());
    this.deepOffsetFrom = options.deepOffsetFrom ?? deepOffsetFrom;
    this.cache = new SnapshotCache(options);
    this.dataVersion = this.reads.queries.dataVersion.pluck();
    this.transaction = db.transaction((read: () => unknown) => {
      this.inTransaction = true;
      try {
        this.cache.follow(() => this.dataVersion.get() as number);
        return read();
      } finally {
        this.inTransaction = false;
      }
    });
    this.pageInSnapshot = (query) => this.fromFile(() => this.page(query));
  }

  /**
   * Names this model file in the entity tags of a file without digests (projection version 3 or
   * older): counters of two files (a rebuild) may be equal while their answers differ.
   */
  modelIdentity(): string {
    this.fileIdentity ??= fileIdentity(this.db);
    return this.fileIdentity;
  }

  private fileIdentity: string | undefined;

  /**
   * Runs the reads of one request: its tag, its page and the position it reports, all of one
   * snapshot of the file, so the position names exactly what the answer shows. Without caching, in
   * one read transaction of the file. With caching, first from what is remembered alone when it
   * holds a snapshot and `how.remembered` allows (a 304 reads nothing); at the first read that needs
   * the file, `read` is run again from the start in one read transaction, where what is remembered
   * is used only if SQLite's `data_version` proves it is of the transaction's own snapshot (else it
   * is forgotten and read again there). So `read` may run twice: before its first read of the file
   * it must do nothing a second run would not undo (setting headers is fine, sending is not).
   */
  inSnapshot<T>(read: (snapshot: ModelSnapshot) => T, how: SnapshotOptions = {}): T {
    if (!this.cache.caching) return this.fromFile(() => read(this));
    this.cache.startRequest(how.fresh === true);
    if (how.remembered !== false && this.cache.remembers()) {
      this.rememberedOnly = true;
      try {
        return read(this);
      } catch (error) {
        if (error !== needsTheFile) throw error;
      } finally {
        this.rememberedOnly = false;
      }
    }
    return this.fromFile(() => read(this));
  }

  /** Forgets remembered digests and position, in every reader sharing its epochs: call after every commit to the file. */
  forgetChanges(): void {
    this.cache.reportCommit();
  }

  private readonly transaction: (read: () => unknown) => unknown;
  private readonly dataVersion: Statement;
  private inTransaction = false;

  /** true while `inSnapshot` answers from what is remembered alone */
  private rememberedOnly = false;

  /** `read` in a read transaction of the file (the one running, if any). */
  private fromFile<T>(read: () => T): T {
    if (this.inTransaction) return read();
    if (this.rememberedOnly) throw needsTheFile;
    return this.transaction(read) as T;
  }

  orgDigest(orgId: number): string {
    return this.digest('orgDigest', `o${orgId}`, orgId);
  }

  orderDigest(orderId: number): string {
    return this.digest('orderDigest', `a${orderId}`, orderId);
  }

  position(): ModelPosition {
    if (this.cache.position !== null) return this.cache.position;
    return this.fromFile(() => {
      const position = new Map<string, number>();
      for (const row of this.reads.queries.positions.iterate() as Iterable<{
        topic: string;
        partition: number;
        next_offset: number;
      }>) {
        position.set(positionKey(row.topic, row.partition), row.next_offset);
      }
      this.cache.position = position;
      return position;
    });
  }

  private digest(statement: DigestStatement, key: string, id: number): string {
    const cached = this.cache.digest(key);
    if (cached !== undefined) return cached;
    return this.fromFile(() => {
      const value = (this.reads.digests?.[statement].get(id) as { digest: number } | undefined)?.digest ?? 0;
      const digest = `${this.reads.digestPrefix}${value.toString(36)}`;
      this.cache.rememberDigest(key, digest);
      return digest;
    });
  }

  /** One page of the organization's listed orders and the total before paging, read in one snapshot. */
  orderPage(query: OrderPageQuery): { orders: Order[]; total: number } {
    return this.pageInSnapshot(query);
  }

  private page(query: OrderPageQuery): { orders: Order[]; total: number } {
    const s = this.reads.queries;
    const all = query.status === null;
    const { total } = (all ? s.countOrders : s.countOrdersByStatus).get(query) as { total: number };
    const list = all ? s.listOrders : s.listOrdersByStatus;
    let rows: OrderListRow[] = [];
    if (query.offset < this.deepOffsetFrom || this.reads.perDay === null) {
      rows = list.all(query) as OrderListRow[];
    } else if (query.offset < total) {
      const start = this.dayOfOffset(query);
      rows = (
        start === null
          ? list.all(query)
          : (all ? s.listOrdersFromDay : s.listOrdersByStatusFromDay).all({
              ...query,
              day: start.day,
              offset: query.offset - start.newer,
            })
      ) as OrderListRow[];
    }
    return {
      total,
      orders: rows.map(([id, title, status, distributionMs, createdAtMs]) => ({
        id,
        press_release_title: title,
        order_status: status,
        distribution_date_utc: formatApiTimestamp(distributionMs ?? createdAtMs),
        created_at: formatApiTimestamp(createdAtMs),
      })),
    };
  }

  /**
   * The day holding the order at `query.offset` and how many listed orders are newer than that
   * day, found by summing whole days from the newest instead of stepping over each newer order;
   * null if the day counts do not reach the offset.
   */
  private dayOfOffset(query: OrderPageQuery): PageStart | null {
    const { perDay } = this.reads;
    if (perDay === null) return null;
    const days = query.status === null ? perDay.ordersPerDay : perDay.ordersPerDayByStatus;
    return pageStart(days.iterate(query) as Iterable<OrdersOfDay>, query.offset);
  }

  /** The order's title and articles, or null when the order is not listed for this organization. */
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null {
    // One statement, in a transaction that follows the file's version (see `inSnapshot`).
    const rows = this.fromFile(
      () => this.reads.queries.articlesOfOrder.all({ orgId, orderId }) as OrderArticleRow[],
    );
    const first = rows[0];
    if (first === undefined) return null;
    if (first[1] === null) return { title: first[0], articles: [] };
    // The LEFT JOIN found articles, so every row has one.
    const articleRows = rows as Extract<OrderArticleRow, [string, number, ...unknown[]]>[];
    return {
      title: first[0],
      articles: articleRows.map(([, id, url, domain, publishedAtMs]) => ({
        id,
        article_url: url,
        published_at: formatApiTimestamp(publishedAtMs),
        website_domain: domain,
      })),
    };
  }
}

/** Executes the read-model queries for the API; every query is scoped by organization in SQL. */
import type { Statement } from 'better-sqlite3';
import { deepOffsetFrom } from '../../projections/orders/paging.js';
import type { Article } from '../../schemas/api.js';
import { articleListOrderOfRow, articleListOrderWidth, articleOfRow } from './answer-rows.js';
import { readOrderPage } from './order-pages.js';
import type { ReadModelDatabase } from './database.js';
import { ReadCache, type CacheOptions } from './reader-caches.js';
import {
  fileIdentity,
  prepareReads,
  type DigestStatement,
  type ReadStatements,
} from './reader-statements.js';
import {
  offsetKey,
  type Positions,
  type ModelRead,
  type OrderPage,
  type OrderPageQuery,
  type ReadOptions,
} from './model-reads.js';

export {
  offsetKey,
  splitOffsetKey,
  type ApiReads,
  type Positions,
  type ModelReads,
  type ModelRead,
  type ListingKey,
  type OrderPage,
  type OrderPageQuery,
  type ReadOptions,
} from './model-reads.js';

/**
 * Rows in raw mode, their columns in the order the answers declare (`answer-rows.ts` maps them).
 * `articlesOfOrder` gives the order's own columns, then one article's: one row per article, or one
 * row with NULL article columns when the order has none.
 */
type RawRow = readonly unknown[];

export interface ReaderOptions extends CacheOptions {
  /**
   * From this offset on, a page starts from the day holding its first order (org_order_days) instead
   * of stepping over every newer order; below it stepping the index is cheaper.
   */
  deepOffsetFrom?: number;
}

/**
 * Thrown out of a read from what is remembered at its first read of the file, and caught by
 * `inReadTransaction`: one object made once, so a throw captures no stack.
 */
const needsTheFile = new Error('this read needs the file: run again in a read transaction');

export class ReadModelReader implements ModelRead {
  /** the statements this file's projection version allows */
  private readonly reads: ReadStatements;
  private readonly deepOffsetFrom: number;
  /** what is remembered of the file's current state (nothing unless `cacheChanges`) */
  private readonly cache: ReadCache;
  /** Created once: better-sqlite3 builds several wrapper functions per `transaction()` call. */
  private readonly pageInTransaction: (query: OrderPageQuery) => OrderPage;

  constructor(
    readonly db: ReadModelDatabase,
    options: ReaderOptions = {},
  ) {
    this.reads = prepareReads(db, () => this.modelIdentity());
    this.deepOffsetFrom = options.deepOffsetFrom ?? deepOffsetFrom;
    this.cache = new ReadCache(options);
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
    this.pageInTransaction = (query) =>
      this.fromFile(() => readOrderPage(this.reads, this.deepOffsetFrom, query));
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
   * read transaction of the file, so the position names exactly what the answer shows. Without caching, in
   * one read transaction of the file. With caching, first from what is remembered alone when it
   * holds a state and `how.remembered` allows (a 304 reads nothing); at the first read that needs
   * the file, `read` is run again from the start in one read transaction, where what is remembered
   * is used only if SQLite's `data_version` proves it is of the transaction's own state (else it
   * is forgotten and read again there). So `read` may run twice: before its first read of the file
   * it must do nothing a second run would not undo (setting headers is fine, sending is not).
   */
  inReadTransaction<T>(read: (model: ModelRead) => T, how: ReadOptions = {}): T {
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

  /** Moved and notified after every commit reported to this reader (slot 0); null when it caches nothing. */
  commitEpochs(): Int32Array | null {
    return this.cache.commitEpochs();
  }

  /** Forgets remembered digests and position, in every reader sharing its epochs: call after every commit to the file. */
  forgetChanges(): void {
    this.cache.reportCommit();
  }

  private readonly transaction: (read: () => unknown) => unknown;
  private readonly dataVersion: Statement;
  private inTransaction = false;

  /** true while `inReadTransaction` answers from what is remembered alone */
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

  position(): Positions {
    if (this.cache.position !== null) return this.cache.position;
    return this.fromFile(() => {
      const position = new Map<string, number>();
      for (const row of this.reads.queries.positions.iterate() as Iterable<{
        topic: string;
        partition: number;
        next_offset: number;
      }>) {
        position.set(offsetKey(row.topic, row.partition), row.next_offset);
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

  /** One page of the organization's listed orders and the total before paging, read in one read transaction. */
  orderPage(query: OrderPageQuery): OrderPage {
    return this.pageInTransaction(query);
  }

  /** The order's title and articles, or null when the order is not listed for this organization. */
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null {
    // One statement, in a transaction that follows the file's version (see `inReadTransaction`).
    const rows = this.fromFile(() => this.reads.queries.articlesOfOrder.all({ orgId, orderId }) as RawRow[]);
    const first = rows[0];
    if (first === undefined) return null;
    const title = articleListOrderOfRow(first).press_release_title;
    // The LEFT JOIN found no article when the first article column is NULL; else every row has one.
    if (first[articleListOrderWidth] === null) return { title, articles: [] };
    return { title, articles: rows.map(articleOfRow) };
  }
}

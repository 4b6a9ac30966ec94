/** Executes the read-model queries for the API; every query is scoped by organization in SQL. */
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { DAY_MS } from '../../projections/orders/listing.js';
import {
  deepOffsetFrom,
  pageStart,
  type OrdersOfDay,
  type PageStart,
} from '../../projections/orders/paging.js';
import type { ListedStatus } from '../../projections/orders/status.js';
import { changeCounterSql, metaSql, readSql, readSqlFor } from '../../projections/orders/sql.js';
import type { Article, Order } from '../../schemas/api.js';
import type { ReadModelDatabase } from './database.js';

/** `listOrders*` rows in raw mode: [id, title, listed_status, distribution_ms, created_at_ms] */
type OrderListRow = [number, string, ListedStatus, number | null, number];

/**
 * `articlesOfOrder` rows in raw mode: [title, article id, url, domain, published_at_ms], one per
 * article; one row with NULL article columns when the order has none.
 */
type OrderArticleRow = [string, number, string, string, number] | [string, null, null, null, null];

const twoDigits = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
/** `YYYY-MM-DD ` of each UTC day met so far; a few hundred per year of data. */
const dayPrefixes = new Map<number, string>();
const maxCachedDays = 100_000;
/** Years 0000–9999, the range of RFC 3339 timestamps. */
const fastRange = {
  from: Date.parse('0000-01-01T00:00:00Z'),
  to: Date.parse('9999-12-31T23:59:59.999Z') + 1,
};

function isoTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * `YYYY-MM-DD HH:MM:SS` in UTC. A page of 50 orders formats 100 of these, so the date part is
 * computed once per day and the time of day with integer arithmetic.
 */
export function formatApiTimestamp(epochMs: number): string {
  if (!(epochMs >= fastRange.from && epochMs < fastRange.to)) return isoTimestamp(epochMs);
  const day = Math.floor(epochMs / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= maxCachedDays) dayPrefixes.clear();
    prefix = isoTimestamp(day * DAY_MS).slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  const seconds = Math.floor((epochMs - day * DAY_MS) / 1000);
  return `${prefix}${twoDigits[Math.floor(seconds / 3600)]}:${twoDigits[Math.floor(seconds / 60) % 60]}:${twoDigits[seconds % 60]}`;
}

export interface OrderPageQuery {
  orgId: number;
  status: ListedStatus | null;
  limit: number;
  offset: number;
}

export interface ReaderOptions {
  /**
   * From this offset on, a page starts from the day holding its first order (org_order_days) instead
   * of stepping over every newer order; below it stepping the index is cheaper.
   */
  deepOffsetFrom?: number;
  /**
   * Remember digests and the position once read, as one snapshot of the file: a 304 then reads
   * nothing. Every read that goes to the file (a fill, a page) checks SQLite's `data_version` in its
   * transaction and starts the remembered snapshot over when another connection has committed, so
   * what is remembered is always of one state of the file and a position given is never older than
   * the page given with it. Forgotten at `forgetChanges()`, or after at most `changesCacheMs`.
   * Only for a reader whose owner calls `forgetChanges()` after every commit (the service does on
   * each batch of its projector thread) and whose connection does not write.
   */
  cacheChanges?: boolean;
  /**
   * Where `forgetChanges()` is counted (`newCacheEpochs`): readers of one file
   * in several threads share it, so that a commit reported to one makes every one of them forget.
   */
  epochs?: Int32Array;
}

/** Slots of a reader's cache epochs: each moves when the caches of that kind must be forgotten. */
const changesEpoch = 0;

/** Cache epochs in shared memory, for the readers of one model file in every thread. */
export function newCacheEpochs(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/** How long a remembered snapshot is trusted without a report of a commit. */
export const changesCacheMs = 1000;

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

/** Bound on remembered digests; past it the cache starts over. */
const maxCachedKeys = 10_000;

/** Statements whose rows are read as arrays: a page of 50 orders is 50 arrays, not 50 keyed objects. */
const rawStatements: ReadonlySet<string> = new Set([
  'listOrders',
  'listOrdersByStatus',
  'listOrdersFromDay',
  'listOrdersByStatusFromDay',
  'ordersPerDay',
  'ordersPerDayByStatus',
  'articlesOfOrder',
]);

type DayStatement = 'ordersPerDay' | 'ordersPerDayByStatus';
type DigestStatement = 'orgDigest' | 'orderDigest';

/** What the HTTP API asks of the read model. */
export type ModelReads = Pick<ReadModelReader, 'inSnapshot' | 'orderPage' | 'articlesOfOrder'>;

/** What the HTTP API asks: the orders model, and the organization of an active key (`src/keys/`). */
export type ApiReads = ModelReads & { orgOfKeyHash(keySha256: string): number | null };

export class ReadModelReader implements ModelSnapshot {
  private readonly statements: {
    [K in Exclude<keyof typeof readSql, DayStatement | DigestStatement>]: Statement;
  };
  /**
   * Digests, or on a file of projection version 3 its change counters (with the file's name in the
   * tag); null on a file of version 2 or older: nobody projects into it, so nothing changes.
   */
  private readonly digests: { [K in DigestStatement]: Statement } | null;
  /** prefixed to what `digests` reads: empty for digests, the file's name for change counters */
  private readonly digestPrefix: string;
  /** null on a file of projection version 1 (no org_order_days), served while its successor is built */
  private readonly perDay: { [K in DayStatement]: Statement } | null;
  private readonly deepOffsetFrom: number;
  /** Created once: better-sqlite3 builds several wrapper functions per `transaction()` call. */
  private readonly pageInSnapshot: (query: OrderPageQuery) => { orders: Order[]; total: number };

  constructor(
    readonly db: ReadModelDatabase,
    options: ReaderOptions = {},
  ) {
    const hasSubMillisecond = (db.prepare(metaSql.orderColumns).all() as { name: string }[]).some(
      (column) => column.name === 'created_at_sub',
    );
    const sql = readSqlFor(hasSubMillisecond);
    const prepare = (name: keyof typeof readSql): Statement => {
      const statement = db.prepare(sql[name]);
      return rawStatements.has(name) ? statement.raw(true) : statement;
    };
    const apart: ReadonlySet<string> = new Set<DayStatement | DigestStatement>([
      'ordersPerDay',
      'ordersPerDayByStatus',
      'orgDigest',
      'orderDigest',
    ]);
    this.statements = Object.fromEntries(
      (Object.keys(sql) as (keyof typeof readSql)[])
        .filter((name) => !apart.has(name))
        .map((name) => [name, prepare(name)]),
    ) as typeof this.statements;
    const hasTable = (name: string): boolean => db.prepare(metaSql.hasTable).get(name) !== undefined;
    if (hasTable('org_digests')) {
      this.digests = { orgDigest: db.prepare(sql.orgDigest), orderDigest: db.prepare(sql.orderDigest) };
      this.digestPrefix = '';
    } else if (hasTable('org_changes')) {
      this.digests = {
        orgDigest: db.prepare(changeCounterSql.orgChanges),
        orderDigest: db.prepare(changeCounterSql.orderChanges),
      };
      this.digestPrefix = `${this.modelIdentity()}.`;
    } else {
      this.digests = null;
      this.digestPrefix = `${this.modelIdentity()}.`;
    }
    // null on a file of projection version 1 (no org_order_days): its deep pages step the index
    this.perDay = hasTable('org_order_days')
      ? { ordersPerDay: prepare('ordersPerDay'), ordersPerDayByStatus: prepare('ordersPerDayByStatus') }
      : null;
    this.deepOffsetFrom = options.deepOffsetFrom ?? deepOffsetFrom;
    this.digestCache = options.cacheChanges === true ? new Map() : null;
    this.epochs = options.epochs ?? newCacheEpochs();
    this.changesEpochSeen = Atomics.load(this.epochs, changesEpoch);
    this.dataVersion = this.statements.dataVersion.pluck();
    this.transaction = db.transaction((read: () => unknown) => {
      this.inTransaction = true;
      try {
        this.followVersion();
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
    this.fileIdentity ??= createHash('sha256').update(this.db.name).digest('base64url').slice(0, 10);
    return this.fileIdentity;
  }

  private fileIdentity: string | undefined;

  /**
   * Runs the reads of one request: its tag, its page and the position it reports. Without caching,
   * in one read transaction of the file, so the position names exactly what the answer shows. With
   * caching, from the remembered snapshot where it can (a 304 reads nothing), and the page in a
   * transaction of its own that moves the remembered snapshot to its own state when the file has
   * changed, so the position given is never older than the page. `fresh`: forget what is
   * remembered first (a presented position that the remembered one has not reached).
   */
  inSnapshot<T>(read: (snapshot: ModelSnapshot) => T, fresh = false): T {
    if (this.digestCache === null) return this.fromFile(() => read(this));
    const epoch = Atomics.load(this.epochs, changesEpoch);
    if (
      fresh ||
      epoch !== this.changesEpochSeen ||
      performance.now() - this.rememberedSince > changesCacheMs
    ) {
      this.forgetSnapshot();
      this.changesEpochSeen = epoch;
      this.rememberedSince = performance.now();
    }
    return read(this);
  }

  /** Forgets remembered digests and position, in every reader sharing its epochs: call after every commit to the file. */
  forgetChanges(): void {
    Atomics.add(this.epochs, changesEpoch, 1);
  }

  private readonly transaction: (read: () => unknown) => unknown;
  private readonly dataVersion: Statement;
  private inTransaction = false;
  private changesEpochSeen: number;
  private rememberedSince = performance.now();

  /** `read` in a read transaction of the file (the one running, if any). */
  private fromFile<T>(read: () => T): T {
    return this.inTransaction ? read() : (this.transaction(read) as T);
  }

  /** In a read transaction: what is remembered becomes of its snapshot if the file changed since. */
  private followVersion(): void {
    if (this.digestCache === null) {
      this.cachedPosition = null;
      return;
    }
    const version = this.dataVersion.get() as number;
    if (version !== this.cachedVersion) {
      this.forgetSnapshot();
      this.cachedVersion = version;
    }
  }

  private forgetSnapshot(): void {
    this.digestCache?.clear();
    this.cachedPosition = null;
    this.cachedVersion = null;
  }

  orgDigest(orgId: number): string {
    return this.digest('orgDigest', `o${orgId}`, orgId);
  }

  orderDigest(orderId: number): string {
    return this.digest('orderDigest', `a${orderId}`, orderId);
  }

  position(): ModelPosition {
    if (this.cachedPosition !== null) return this.cachedPosition;
    return this.fromFile(() => {
      const position = new Map<string, number>();
      for (const row of this.statements.positions.iterate() as Iterable<{
        topic: string;
        partition: number;
        next_offset: number;
      }>) {
        position.set(positionKey(row.topic, row.partition), row.next_offset);
      }
      this.cachedPosition = position;
      return position;
    });
  }

  private readonly epochs: Int32Array;

  private digest(statement: DigestStatement, key: string, id: number): string {
    const cache = this.digestCache;
    const cached = cache?.get(key);
    if (cached !== undefined) return cached;
    return this.fromFile(() => {
      const value = (this.digests?.[statement].get(id) as { digest: number } | undefined)?.digest ?? 0;
      const digest = `${this.digestPrefix}${value.toString(36)}`;
      if (cache !== null) {
        if (cache.size >= maxCachedKeys) cache.clear();
        cache.set(key, digest);
      }
      return digest;
    });
  }

  /** digest key (`o<org>`, `a<order>`) → tag part, valid for `cachedVersion`; null when not caching */
  private readonly digestCache: Map<string, string> | null;
  private cachedVersion: number | null = null;
  private cachedPosition: ModelPosition | null = null;

  /** One page of the organization's listed orders and the total before paging, read in one snapshot. */
  orderPage(query: OrderPageQuery): { orders: Order[]; total: number } {
    return this.pageInSnapshot(query);
  }

  private page(query: OrderPageQuery): { orders: Order[]; total: number } {
    const s = this.statements;
    const all = query.status === null;
    const { total } = (all ? s.countOrders : s.countOrdersByStatus).get(query) as { total: number };
    const list = all ? s.listOrders : s.listOrdersByStatus;
    let rows: OrderListRow[] = [];
    if (query.offset < this.deepOffsetFrom || this.perDay === null) {
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
    if (this.perDay === null) return null;
    const perDay = query.status === null ? this.perDay.ordersPerDay : this.perDay.ordersPerDayByStatus;
    return pageStart(perDay.iterate(query) as Iterable<OrdersOfDay>, query.offset);
  }

  /** The order's title and articles, or null when the order is not listed for this organization. */
  articlesOfOrder(orgId: number, orderId: number): { title: string; articles: Article[] } | null {
    // One statement, in a transaction that follows the file's version (see `inSnapshot`).
    const rows = this.fromFile(
      () => this.statements.articlesOfOrder.all({ orgId, orderId }) as OrderArticleRow[],
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

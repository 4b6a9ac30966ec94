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
import { metaSql, readSql, readSqlFor } from '../../projections/orders/sql.js';
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
   * Remember change counters once read, until `forgetChanges()` or for at most `changesCacheMs`: a
   * 304 then reads nothing. Only for a reader whose owner calls `forgetChanges()` after every commit
   * (the service does on each batch of its projector thread); the time bound covers a commit whose
   * report never arrives (a thread that dies right after it).
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

/** How long a remembered change counter is trusted without a report of a commit. */
export const changesCacheMs = 1000;

/** Bound on remembered change counters; past it the cache starts over. */
const maxCachedCounters = 10_000;

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
type ChangeStatement = 'orgChanges' | 'orderChanges';

/** What the HTTP API asks of the orders model. */
export type ModelReads = Pick<
  ReadModelReader,
  'orderPage' | 'articlesOfOrder' | 'orgChanges' | 'orderChanges' | 'modelIdentity'
>;

/** What the HTTP API asks: the orders model, and the organization of an active key (`src/keys/`). */
export type ApiReads = ModelReads & { orgOfKeyHash(keySha256: string): number | null };

export class ReadModelReader {
  private readonly statements: {
    [K in Exclude<keyof typeof readSql, DayStatement | ChangeStatement>]: Statement;
  };
  /** null on a file of projection version 2 or older: nobody projects into it, so nothing changes */
  private readonly changes: { [K in ChangeStatement]: Statement } | null;
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
    const apart: ReadonlySet<string> = new Set<DayStatement | ChangeStatement>([
      'ordersPerDay',
      'ordersPerDayByStatus',
      'orgChanges',
      'orderChanges',
    ]);
    this.statements = Object.fromEntries(
      (Object.keys(sql) as (keyof typeof readSql)[])
        .filter((name) => !apart.has(name))
        .map((name) => [name, prepare(name)]),
    ) as typeof this.statements;
    const hasTable = (name: string): boolean => db.prepare(metaSql.hasTable).get(name) !== undefined;
    this.changes = hasTable('org_changes')
      ? { orgChanges: db.prepare(sql.orgChanges), orderChanges: db.prepare(sql.orderChanges) }
      : null;
    // null on a file of projection version 1 (no org_order_days): its deep pages step the index
    this.perDay = hasTable('org_order_days')
      ? { ordersPerDay: prepare('ordersPerDay'), ordersPerDayByStatus: prepare('ordersPerDayByStatus') }
      : null;
    this.deepOffsetFrom = options.deepOffsetFrom ?? deepOffsetFrom;
    this.changeCache = options.cacheChanges === true ? new Map() : null;
    this.epochs = options.epochs ?? newCacheEpochs();
    this.changesEpochSeen = Atomics.load(this.epochs, changesEpoch);
    this.pageInSnapshot = db.transaction((query: OrderPageQuery) => this.page(query));
  }

  /**
   * Names this model file in entity tags: counters of two files (a rebuild) may be equal while their
   * answers differ, so a tag never matches across files.
   */
  modelIdentity(): string {
    this.fileIdentity ??= createHash('sha256').update(this.db.name).digest('base64url').slice(0, 10);
    return this.fileIdentity;
  }

  private fileIdentity: string | undefined;

  /** The organization's change counter: it moves with every change GET /orders could show. */
  orgChanges(orgId: number): number {
    return this.changeCounter('orgChanges', `o${orgId}`, orgId);
  }

  /** The order's change counter: it moves with every change to the order or its articles. */
  orderChanges(orderId: number): number {
    return this.changeCounter('orderChanges', `a${orderId}`, orderId);
  }

  /** Forgets remembered change counters, in every reader sharing its epochs: call after every commit to the file. */
  forgetChanges(): void {
    Atomics.add(this.epochs, changesEpoch, 1);
  }

  private readonly epochs: Int32Array;
  private changesEpochSeen: number;

  private changeCounter(statement: ChangeStatement, key: string, id: number): number {
    const cache = this.changeCache;
    if (cache !== null) {
      const epoch = Atomics.load(this.epochs, changesEpoch);
      if (epoch !== this.changesEpochSeen || performance.now() - this.changeCacheSince > changesCacheMs) {
        cache.clear();
        this.changesEpochSeen = epoch;
        this.changeCacheSince = performance.now();
      }
      const cached = cache.get(key);
      if (cached !== undefined) return cached;
    }
    const changes = (this.changes?.[statement].get(id) as { changes: number } | undefined)?.changes ?? 0;
    if (cache !== null) {
      if (cache.size >= maxCachedCounters) cache.clear();
      cache.set(key, changes);
    }
    return changes;
  }

  /** counter key (`o<org>`, `a<order>`) → value; null when not caching */
  private readonly changeCache: Map<string, number> | null;
  private changeCacheSince = performance.now();

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
    // One statement: one snapshot, no explicit transaction needed.
    const rows = this.statements.articlesOfOrder.all({ orgId, orderId }) as OrderArticleRow[];
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

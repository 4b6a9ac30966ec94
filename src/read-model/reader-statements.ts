/**
 * The statements a reader prepares, as the file's projection version allows: a file of an earlier
 * version is served read-only while its successor is built, so what it lacks is read otherwise
 * (change counters for digests, no sub-millisecond order) or not at all (days of orders).
 */
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { changeCounterSql, metaSql, readSql, readSqlFor } from '../../projections/orders/sql.js';
import type { ReadModelDatabase } from './database.js';

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
export type DigestStatement = 'orgDigest' | 'orderDigest';

export interface ReadStatements {
  /** what every file answers */
  queries: { [K in Exclude<keyof typeof readSql, DayStatement | DigestStatement>]: Statement };
  /**
   * Digests, or on a file of projection version 3 its change counters (with the file's name in the
   * tag); null on a file of version 2 or older: nobody projects into it, so nothing changes.
   */
  digests: { [K in DigestStatement]: Statement } | null;
  /** prefixed to what `digests` reads: empty for digests, the file's name for change counters */
  digestPrefix: string;
  /** null on a file of projection version 1 (no org_order_days), served while its successor is built */
  perDay: { [K in DayStatement]: Statement } | null;
}

/**
 * Names a model file in the entity tags of a file without digests (projection version 3 or
 * older): counters of two files (a rebuild) may be equal while their answers differ.
 */
export function fileIdentity(db: ReadModelDatabase): string {
  return createHash('sha256').update(db.name).digest('base64url').slice(0, 10);
}

export function prepareReads(db: ReadModelDatabase, identity: () => string): ReadStatements {
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
  const queries = Object.fromEntries(
    (Object.keys(sql) as (keyof typeof readSql)[])
      .filter((name) => !apart.has(name))
      .map((name) => [name, prepare(name)]),
  ) as ReadStatements['queries'];
  const hasTable = (name: string): boolean => db.prepare(metaSql.hasTable).get(name) !== undefined;
  let digests: ReadStatements['digests'];
  let digestPrefix: string;
  if (hasTable('org_digests')) {
    digests = { orgDigest: db.prepare(sql.orgDigest), orderDigest: db.prepare(sql.orderDigest) };
    digestPrefix = '';
  } else if (hasTable('org_changes')) {
    digests = {
      orgDigest: db.prepare(changeCounterSql.orgChanges),
      orderDigest: db.prepare(changeCounterSql.orderChanges),
    };
    digestPrefix = `${identity()}.`;
  } else {
    digests = null;
    digestPrefix = `${identity()}.`;
  }
  // null on a file of projection version 1 (no org_order_days): its deep pages step the index
  const perDay = hasTable('org_order_days')
    ? { ordersPerDay: prepare('ordersPerDay'), ordersPerDayByStatus: prepare('ordersPerDayByStatus') }
    : null;
  return { queries, digests, digestPrefix, perDay };
}

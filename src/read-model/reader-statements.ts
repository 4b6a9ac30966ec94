/**
 * The statements a reader prepares, as the file's projection version says: the current version's,
 * or the previous version's (`projections/orders/compat/`: by the columns the file has), served
 * read-only while its successor is built. A file of any other version is refused here, before
 * anything reads it.
 */
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { readLayoutOf, readableLayouts } from '../../projections/orders/compat/readable.js';
import { lackedAnswerColumns, type FileColumns, type readSql } from '../../projections/orders/read-sql.js';
import { columnsOf, projectionVersionOf, type ReadModelDatabase } from './database.js';

/**
 * Statements whose rows are read as objects by name: a count, the position, SQLite's counter (the
 * digests too, prepared apart below). Every other statement is read as arrays, mapped by position
 * (`answer-rows.ts`): a page of 50 orders is 50 arrays, not 50 keyed objects, and a new answer's
 * statement needs no entry here.
 */
const keyedStatements: ReadonlySet<string> = new Set<keyof typeof readSql>([
  'countOrders',
  'countOrdersByStatus',
  'positions',
  'dataVersion',
]);

const dayStatements = ['ordersPerDay', 'ordersPerDayByStatus'] as const;
const digestStatements = ['orgDigest', 'orderDigest'] as const;
type DayStatement = (typeof dayStatements)[number];
export type DigestStatement = (typeof digestStatements)[number];

export interface ReadStatements {
  /** what every file answers */
  queries: { [K in Exclude<keyof typeof readSql, DayStatement | DigestStatement>]: Statement };
  /**
   * the digests, or on a file of the previous version what stands in their place; never null since
   * versions 1 and 2 are no longer read (reader.ts keeps its null branches until it is next reshaped)
   */
  digests: { [K in DigestStatement]: Statement } | null;
  /** prefixed to what `digests` reads: empty for digests, the file's name where the layout says so */
  digestPrefix: string;
  perDay: { [K in DayStatement]: Statement } | null;
}

/** A file of a projection version this code does not read (neither the current nor the previous one). */
export class UnreadableProjectionVersion extends Error {
  readonly code = 'UNREADABLE_PROJECTION_VERSION';
  constructor(file: string, version: number) {
    const readable = readableLayouts.map((layout) => layout.version).join(' and ');
    super(
      `${file} holds projection version ${version}; this code reads versions ${readable} only: upgrade through the release in between, or rebuild the model from the topics`,
    );
  }
}

/**
 * Names a model file in the entity tags of a file whose layout says its digests are only counters:
 * counters of two files (a rebuild) may be equal while their answers differ.
 */
export function fileIdentity(db: ReadModelDatabase): string {
  return createHash('sha256').update(db.name).digest('base64url').slice(0, 10);
}

/** The columns the file has of the tables answers are read from. */
export function fileColumnsOf(db: ReadModelDatabase): FileColumns {
  return { orders: columnsOf(db, 'orders'), articles: columnsOf(db, 'articles') };
}

export function prepareReads(db: ReadModelDatabase, identity: () => string): ReadStatements {
  const version = projectionVersionOf(db);
  const layout = readLayoutOf(version);
  if (layout === null) throw new UnreadableProjectionVersion(db.name, version);
  const columns = fileColumnsOf(db);
  const sql = layout.sqlFor(columns);
  // An answer with a column read as NULL differs from the successor's under the same digests:
  // its tags name the file, so that neither a 304 nor a kept body ever stands for the other.
  const namesFile = layout.tagNamesFile || lackedAnswerColumns(columns).length > 0;
  const prepare = (name: keyof typeof readSql): Statement => {
    const statement = db.prepare(sql[name]);
    return keyedStatements.has(name) ? statement : statement.raw(true);
  };
  const apart: ReadonlySet<string> = new Set([...dayStatements, ...digestStatements]);
  const queries = Object.fromEntries(
    (Object.keys(sql) as (keyof typeof readSql)[])
      .filter((name) => !apart.has(name))
      .map((name) => [name, prepare(name)]),
  ) as ReadStatements['queries'];
  return {
    queries,
    digests: { orgDigest: db.prepare(sql.orgDigest), orderDigest: db.prepare(sql.orderDigest) },
    digestPrefix: namesFile ? `${identity()}.` : '',
    perDay: { ordersPerDay: prepare('ordersPerDay'), ordersPerDayByStatus: prepare('ordersPerDayByStatus') },
  };
}

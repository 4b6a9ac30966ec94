/**
 * The statements that read answers, and how a file of each readable projection version is read
 * (`ReadLayout`): prepared against the columns the file has, so a text column it lacks reads as
 * NULL. src/ prepares and executes these (`src/read-model/reader-statements.ts`).
 */
import {
  answerColumns,
  answers,
  articleFields,
  articleListOrderFields,
  orderFields,
  type FieldSpec,
} from './answers.js';
import { DAY_MS } from './listing.js';
import { PROJECTION_VERSION } from './schema.js';

/**
 * The columns a file has of the tables answers are read from, as the file itself says
 * (`PRAGMA table_info`): what a file of the previous version is read by (`readSqlFor`).
 */
export interface FileColumns {
  orders: ReadonlySet<string>;
  articles: ReadonlySet<string>;
}

/**
 * The answers' columns a file may lack: those of text fields, shown as `null` (a field added as
 * text is declared nullable). An id, a status or a timestamp has no `null` on the wire, so a file
 * lacking one is read only by a compat module of its version.
 */
const lackable: ReadonlySet<string> = new Set(
  Object.values(answers).flatMap((fields) =>
    Object.values(fields as Readonly<Record<string, FieldSpec<string>>>)
      .filter((spec) => spec.format === 'text' && spec.orElse === undefined)
      .map((spec) => spec.column),
  ),
);

/** The answers' columns each table has: what a file is checked against. */
const answerTables = {
  orders: [...new Set([...answerColumns(orderFields), ...answerColumns(articleListOrderFields)])],
  articles: answerColumns(articleFields),
} as const;

/**
 * The answers' columns `file` lacks, as `table.column`. A lacked column that is not text throws:
 * the file is then not read by its columns.
 */
export function lackedAnswerColumns(file: FileColumns): string[] {
  const lacked = (Object.keys(answerTables) as (keyof FileColumns)[]).flatMap((table) =>
    answerTables[table].filter((column) => !file[table].has(column)).map((column) => `${table}.${column}`),
  );
  for (const name of lacked) {
    if (!lackable.has(name.split('.')[1] ?? '')) {
      throw new Error(
        `the file lacks ${name}, which is not a text column and cannot be shown as null: reading its version needs a compat module (projections/orders/compat/)`,
      );
    }
  }
  return lacked;
}

/** `columns`, each as `prefix` + its name, or NULL where `has` says the file lacks it. */
function selectList(columns: readonly string[], has: ReadonlySet<string> | undefined, prefix = ''): string[] {
  return columns.map((column) => (has === undefined || has.has(column) ? `${prefix}${column}` : 'NULL'));
}

const newestFirst = `ORDER BY created_at_ms DESC, created_at_sub DESC, order_id DESC LIMIT @limit OFFSET @offset`;
/** The listing's order as one row value: a keyset page seeks the index to it (no OFFSET). */
const listingKey = `(created_at_ms, created_at_sub, order_id)`;
const keyParams = `(@createdAtMs, @createdAtSub, @orderId)`;
/** After a key: the older orders, newest first. */
const afterKey = `AND ${listingKey} < ${keyParams}
    ORDER BY created_at_ms DESC, created_at_sub DESC, order_id DESC LIMIT @limit`;
/** Before a key: the newer orders, oldest first (the reader turns them round), nearest the key first. */
const beforeKey = `AND ${listingKey} > ${keyParams}
    ORDER BY created_at_ms, created_at_sub, order_id LIMIT @limit`;

/**
 * The read statements, selecting the answers' columns (`answerColumns`: the reader maps them by
 * position). Given a file's columns (`file`), a text column an answer shows and the file lacks is
 * read as NULL: a text field added by the current version is shown as `null` from the previous
 * version's file while its successor is built, with no module for that version (any other column
 * lacked throws, `lackedAnswerColumns`). The listing's key
 * (`created_at_ms`, `created_at_sub`, `order_id`), `org_id`, `listed_status` and the articles'
 * `removed` and `published_at_ms` are read as they are: every version read has them.
 */
export function readSqlFor(file?: FileColumns) {
  if (file !== undefined) lackedAnswerColumns(file);
  const orderListColumns = selectList(answerColumns(orderFields), file?.orders).join(', ');
  /** The order's columns and then its articles' (`articlesOfOrder`). */
  const articleListColumns = [
    ...selectList(answerColumns(articleListOrderFields), file?.orders, 'o.'),
    ...selectList(answerColumns(articleFields), file?.articles, 'a.'),
  ].join(', ');
  /**
   * A page's rows end with `created_at_sub`, which no field shows: with `created_at_ms` and
   * `order_id` it is where the row stands in the listing's order, what a cursor names
   * (`src/http/cursor.ts`).
   */
  const pageColumns = `${orderListColumns}, created_at_sub`;
  return {
    /** Walks the covering index `orders_listed_by_org` backwards: newest first, ties by id, no sort step. */
    listOrders: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status IS NOT NULL ${newestFirst}`,
    /** Walks the same index, skipping entries of the other status. */
    listOrdersByStatus: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status = @status ${newestFirst}`,
    /** `listOrders` from the end of day @day backwards: OFFSET counts within that day only. */
    listOrdersFromDay: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status IS NOT NULL AND created_at_ms < (@day + 1) * ${DAY_MS}
    ${newestFirst}`,
    listOrdersByStatusFromDay: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status = @status AND created_at_ms < (@day + 1) * ${DAY_MS}
    ${newestFirst}`,
    /**
     * A cursor's page (keyset): seeks the same covering index to the cursor's key instead of stepping
     * over every newer order, so a page costs the same at any depth. Every one scoped by organization.
     */
    listOrdersAfter: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status IS NOT NULL ${afterKey}`,
    listOrdersByStatusAfter: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status = @status ${afterKey}`,
    listOrdersBefore: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status IS NOT NULL ${beforeKey}`,
    listOrdersByStatusBefore: `SELECT ${pageColumns} FROM orders
    WHERE org_id = @orgId AND listed_status = @status ${beforeKey}`,
    /** Listed orders per day, newest day first (both statuses of a day are adjacent): where a deep offset falls. */
    ordersPerDay: `SELECT day, orders FROM org_order_days WHERE org_id = @orgId ORDER BY day DESC`,
    ordersPerDayByStatus: `SELECT day, orders FROM org_order_days
    WHERE org_id = @orgId AND listed_status = @status ORDER BY day DESC`,
    countOrders: `SELECT coalesce(sum(orders), 0) AS total FROM org_order_counts WHERE org_id = @orgId`,
    countOrdersByStatus: `SELECT coalesce(sum(orders), 0) AS total FROM org_order_counts
    WHERE org_id = @orgId AND listed_status = @status`,
    /**
     * The order's fields (when it is listed and belongs to the organization) with its articles', one
     * row per article or a single row with NULL article columns; no row when the order is not accessible.
     * Scoped by organization through the order, so the query can never return another organization's articles.
     */
    articlesOfOrder: `SELECT ${articleListColumns}
    FROM orders o LEFT JOIN articles a ON a.order_id = o.order_id AND a.removed = 0
    WHERE o.order_id = @orderId AND o.org_id = @orgId AND o.listed_status IS NOT NULL
    ORDER BY a.published_at_ms DESC, a.article_id DESC`,
    /** What a conditional GET /orders compares: the organization's digest (0: nothing listed). */
    orgDigest: `SELECT coalesce((SELECT digest FROM org_digests WHERE org_id = ?), 0) AS digest`,
    /** The same for one order's articles. */
    orderDigest: `SELECT coalesce((SELECT digest FROM order_digests WHERE order_id = ?), 0) AS digest`,
    /** The model's position: what it has read of every partition, in the same file as its effects. */
    positions: `SELECT topic, partition, next_offset FROM consumer_offsets`,
    /** Moves whenever another connection commits to the file: what the reader's caches are valid for. */
    dataVersion: `PRAGMA data_version`,
  } as const;
}

/** The current version's read statements, every column read as it is. */
export const readSql = readSqlFor();

export type ReadSql = Record<keyof typeof readSql, string>;

/**
 * How this code reads a file of one projection version: its read statements for the columns the
 * file has, and whether an entity tag from it names the file. The current version's is below; the
 * previous version is read by its columns alone (`byColumns`), or by `compat/v<N-1>.ts` where the
 * meaning of what it stores differs; `compat/readable.ts` lists the two (no other version is read).
 */
export interface ReadLayout {
  version: number;
  sqlFor: (file: FileColumns) => ReadSql;
  /** the file's digests are only counters, equal in two files whose answers differ: the tag names the file */
  tagNamesFile: boolean;
}

export const currentLayout: ReadLayout = {
  version: PROJECTION_VERSION,
  // a file of this version has every column (`readSqlFor` then writes `readSql` as it is)
  sqlFor: readSqlFor,
  tagNamesFile: false,
};

/** A version whose file differs from the current one only by answer columns it lacks (read as NULL). */
export function byColumns(version: number): ReadLayout {
  return { version, sqlFor: readSqlFor, tagNamesFile: false };
}

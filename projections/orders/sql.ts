/**
 * The SQL that writes and reads the read model's tables. src/ prepares and
 * executes these; it writes no SQL of its own against these tables. The keys store's table has its
 * own (`projections/keys/sql.ts`); the positions, dead letters and version below serve both stores.
 */
import {
  answerColumns,
  articleFields,
  articleListOrderFields,
  orderFields,
  type FieldSpec,
} from './answers.js';
import { DAY_MS } from './listing.js';
import { PROJECTION_VERSION } from './schema.js';
import { articleColumns, orderColumns } from './rows.js';

/** `n` rows of `width` positional parameters each, as a VALUES list: `(?, ?), (?, ?)`. */
function valueRows(width: number, n: number, row = `(${Array<string>(width).fill('?').join(', ')})`): string {
  return Array<string>(n).fill(row).join(', ');
}

/**
 * An in-place upsert of `rows` rows: unlike INSERT OR REPLACE it touches only the indexes of columns
 * that change. Parameters are positional, in the order of `columns`, row after row (binding by
 * position costs less per row, and one statement for many rows costs less per row than one each).
 */
function upsert(table: string, columns: readonly string[], rows = 1): string {
  const [key, ...rest] = columns;
  return (
    `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${valueRows(columns.length, rows)} ` +
    `ON CONFLICT (${key ?? ''}) DO UPDATE SET ${rest.map((c) => `${c} = excluded.${c}`).join(', ')}`
  );
}

/** `digest` XOR `excluded.digest`: SQLite has no XOR operator, and this never overflows. */
const xorDigest = `digest = (digest | excluded.digest) & ~(digest & excluded.digest)`;

/** XORs a change into the digests of `rows` ids (parameters: id, change, row after row). */
function xorDigests(table: string, key: string, rows: number): string {
  return `INSERT INTO ${table} (${key}, digest) VALUES ${valueRows(2, rows)}
    ON CONFLICT (${key}) DO UPDATE SET ${xorDigest}`;
}

/**
 * The most rows one statement of `manyRowsSql` writes. A batch writes its new orders, its articles
 * and its change counters this many rows a statement: in the projector's own benchmark
 * (`bench:core`) that made a batch's writes cheaper per row than one statement per row.
 */
export const maxRowsPerStatement = 32;

/** Statements that write `rows` rows at once, each row's parameters after the previous row's. */
export const manyRowsSql = {
  /** Parameters: the values of `orderColumns`, in that order, for each row. */
  insertOrders: (rows: number) =>
    `INSERT INTO orders (${orderColumns.join(', ')}) VALUES ${valueRows(orderColumns.length, rows)}`,
  /** Parameters: the values of `articleColumns`, in that order, for each row. */
  upsertArticles: (rows: number) => upsert('articles', articleColumns, rows),
  /** Parameters: the organization id and the change to its digest, for each row. */
  xorOrgDigests: (rows: number) => xorDigests('org_digests', 'org_id', rows),
  /** Parameters: the order id and the change to its digest, for each row. */
  xorOrderDigests: (rows: number) => xorDigests('order_digests', 'order_id', rows),
} as const;

/**
 * Sets only the given columns of an order: SQLite then maintains only the indexes that hold one of
 * them (a status change within `processing` touches no listing index). Parameters: the columns' values
 * in the order given, then the order id.
 */
export function updateOrderSql(columns: readonly (typeof orderColumns)[number][]): string {
  return `UPDATE orders SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE order_id = ?`;
}

export const writeSql = {
  /** The rows of the ids in a JSON array: a batch reads its rows with one statement per table. */
  selectOrders: `SELECT ${orderColumns.join(', ')} FROM orders WHERE order_id IN (SELECT value FROM json_each(?))`,
  selectArticles: `SELECT ${articleColumns.join(', ')} FROM articles WHERE article_id IN (SELECT value FROM json_each(?))`,
  /** Adds a batch's net increase to a counter (the CHECK applies to the VALUES row too, so only > 0). */
  increaseOrderCount: `INSERT INTO org_order_counts (org_id, listed_status, orders) VALUES (?, ?, ?)
    ON CONFLICT (org_id, listed_status) DO UPDATE SET orders = orders + excluded.orders`,
  /** Subtracts a batch's net decrease from an existing counter. */
  decreaseOrderCount: `UPDATE org_order_counts SET orders = orders - ? WHERE org_id = ? AND listed_status = ?`,
  /** A zero counter means the same as no counter: removing it keeps table dumps independent of history. */
  dropEmptyOrderCount: `DELETE FROM org_order_counts WHERE org_id = ? AND listed_status = ? AND orders = 0`,
  increaseOrderDay: `INSERT INTO org_order_days (org_id, day, listed_status, orders) VALUES (?, ?, ?, ?)
    ON CONFLICT (org_id, day, listed_status) DO UPDATE SET orders = orders + excluded.orders`,
  decreaseOrderDay: `UPDATE org_order_days SET orders = orders - ? WHERE org_id = ? AND day = ? AND listed_status = ?`,
  dropEmptyOrderDay: `DELETE FROM org_order_days WHERE org_id = ? AND day = ? AND listed_status = ? AND orders = 0`,
  /** A zero digest means the same as none: removing it keeps the table a function of the rows shown. */
  dropZeroOrgDigests: `DELETE FROM org_digests WHERE digest = 0 AND org_id IN (SELECT value FROM json_each(?))`,
  dropZeroOrderDigests: `DELETE FROM order_digests WHERE digest = 0 AND order_id IN (SELECT value FROM json_each(?))`,
  selectOffsets: `SELECT topic, partition, next_offset FROM consumer_offsets ORDER BY topic, partition`,
  upsertOffset: `INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES (?, ?, ?)
    ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset`,
  insertDeadLetter: `INSERT OR IGNORE INTO dead_letters
    (topic, partition, "offset", message_key, raw_value, reason, detail, recorded_at)
    VALUES (@topic, @partition, @offset, @key, @value, @reason, @detail, @recordedAt)`,
} as const;

/** Copies a table of the attached `part` whole; rows that are in both files fail the copy. */
function copyPart(table: string, columns: readonly string[], key: string): string {
  return `INSERT INTO ${table} (${columns.join(', ')}) SELECT ${columns.join(', ')} FROM part.${table} ORDER BY ${key}`;
}

/** Adds the attached `part`'s counters to the file's own. */
function addPart(table: string, keys: readonly string[], counter: string): string {
  const columns = [...keys, counter].join(', ');
  return `INSERT INTO ${table} (${columns}) SELECT ${columns} FROM part.${table} WHERE true
    ON CONFLICT (${keys.join(', ')}) DO UPDATE SET ${counter} = ${counter} + excluded.${counter}`;
}

/** XORs the attached `part`'s digests into the file's own, then drops those that became zero. */
function xorPart(table: string, key: string): string[] {
  return [
    `INSERT INTO ${table} (${key}, digest) SELECT ${key}, digest FROM part.${table} WHERE true
    ON CONFLICT (${key}) DO UPDATE SET ${xorDigest}`,
    `DELETE FROM ${table} WHERE digest = 0`,
  ];
}

/**
 * Joins into a rebuild's file the tables of a part of it built from other topics in a file of its
 * own, attached as `part` (`src/projector/rebuild.ts`). The two read disjoint topics, so no row of
 * an entity or a partition is in both: a copy that meets one fails rather than choosing. Counters
 * of listed orders add up (an order counts where its row is), and digests XOR (an order's title is in
 * one part, its articles in the other).
 */
export const joinPartSql = [
  copyPart('orders', orderColumns, 'order_id'),
  copyPart('articles', articleColumns, 'article_id'),
  addPart('org_order_counts', ['org_id', 'listed_status'], 'orders'),
  addPart('org_order_days', ['org_id', 'day', 'listed_status'], 'orders'),
  ...xorPart('org_digests', 'org_id'),
  ...xorPart('order_digests', 'order_id'),
  copyPart('consumer_offsets', ['topic', 'partition', 'next_offset'], 'topic, partition'),
  copyPart(
    'dead_letters',
    ['topic', 'partition', '"offset"', 'message_key', 'raw_value', 'reason', 'detail', 'recorded_at'],
    'id',
  ),
] as const;

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
  [orderFields, articleListOrderFields, articleFields].flatMap((fields) =>
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

/** What a file says of itself: its projection version, its layout, its indexes. */
export const metaSql = {
  hasProjectionMeta: `SELECT 1 FROM sqlite_schema WHERE name = 'projection_meta'`,
  insertProjectionVersion: `INSERT INTO projection_meta (key, value) VALUES ('projection_version', ?)`,
  projectionVersion: `SELECT value FROM projection_meta WHERE key = 'projection_version'`,
  /** explicit indexes only: the automatic ones (sql IS NULL) back primary keys and UNIQUE constraints */
  explicitIndexes: `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`,
} as const;

/** What the operator's CLI reads (`status`, `dead-letters`). */
export const operatorSql = {
  storedOffset: `SELECT next_offset FROM consumer_offsets WHERE topic = ? AND partition = ?`,
  modelCounts: `SELECT
      (SELECT coalesce(sum(orders), 0) FROM org_order_counts) AS listedOrders,
      (SELECT count(DISTINCT org_id) FROM org_order_counts) AS organizations,
      (SELECT count(*) FROM articles WHERE removed = 0) AS articles,
      (SELECT count(*) FROM dead_letters) AS deadLetters`,
  deadLettersByReason: `SELECT reason, count(*) AS n FROM dead_letters GROUP BY reason ORDER BY n DESC`,
  newestDeadLetters: `SELECT topic, partition, "offset", CAST(message_key AS TEXT) AS key, reason, detail, recorded_at,
      substr(CAST(raw_value AS TEXT), 1, 200) AS value_preview
    FROM dead_letters WHERE (@reason IS NULL OR reason = @reason) ORDER BY id DESC LIMIT @limit`,
  operatorSkips: `SELECT topic, partition, "offset", detail, recorded_at FROM dead_letters
    WHERE reason = 'skipped_by_operator' ORDER BY id`,
} as const;

/**
 * The SQL that writes the read model's tables, joins a rebuild's parts and serves the operator's
 * CLI; the statements that read answers are in `read-sql.ts`. src/ prepares and executes these; it
 * writes no SQL of its own against these tables. The keys store's table has its
 * own (`projections/keys/sql.ts`); the positions, dead letters and version below serve both stores.
 */
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

/**
 * Copies a table of the attached `part` whole, every column; rows that are in both files fail the
 * copy. Both files are made from the same schema, so in this exact form (`SELECT *`, no column list,
 * no WHERE or ORDER BY) SQLite copies the rows as they are stored, without decoding them (its
 * transfer optimization). The articles' copy is most of a rebuild's join: 0.40–0.59 s against
 * 0.74–1.02 s at 200 000 orders, 3.1–3.2 s against 3.5 s at 1 000 000 (bench/README.md).
 */
function copyWhole(table: string): string {
  return `INSERT INTO ${table} SELECT * FROM part.${table}`;
}

/** Copies the given columns of a table of the attached `part`; rows that are in both files fail the copy. */
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
  copyWhole('orders'),
  copyWhole('articles'),
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

/** What a file says of itself: its projection version, its layout, its indexes. */
export const metaSql = {
  hasProjectionMeta: `SELECT 1 FROM sqlite_schema WHERE name = 'projection_meta'`,
  insertProjectionVersion: `INSERT INTO projection_meta (key, value) VALUES ('projection_version', ?)`,
  projectionVersion: `SELECT value FROM projection_meta WHERE key = 'projection_version'`,
  /** explicit indexes only: the automatic ones (sql IS NULL) back primary keys and UNIQUE constraints */
  explicitIndexes: `SELECT name, tbl_name AS "table", sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`,
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

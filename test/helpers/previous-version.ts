/**
 * A model file of the previous projection version (3) as that version created it: from its
 * checked-in schema (`projections/orders/compat/v3.schema.sql`), never faked from today's schema.
 */
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { v3SchemaSqlFile } from '../../projections/orders/compat/v3.js';
import { metaSql } from '../../projections/orders/sql.js';

/** The tables version 3 shares with version 4, column for column. */
const sharedTables = ['orders', 'articles', 'org_order_counts', 'org_order_days', 'consumer_offsets'];

/**
 * Creates `file` from the version-3 schema with the rows of the projected file `from` (of the
 * current version) and the given change counters, where version 4 has digests.
 */
export function previousVersionFileFrom(
  from: string,
  file: string,
  counters: { org?: Record<number, number>; order?: Record<number, number> } = {},
): void {
  const db = new Database(file);
  try {
    db.exec(readFileSync(v3SchemaSqlFile, 'utf8'));
    db.prepare(metaSql.insertProjectionVersion).run('3');
    db.prepare('ATTACH DATABASE ? AS projected').run(from);
    for (const table of sharedTables) db.exec(`INSERT INTO main.${table} SELECT * FROM projected.${table}`);
    db.exec('DETACH DATABASE projected');
    const count = db.prepare('INSERT INTO org_changes (org_id, changes) VALUES (?, ?)');
    for (const [id, n] of Object.entries(counters.org ?? {})) count.run(Number(id), n);
    const orderCount = db.prepare('INSERT INTO order_changes (order_id, changes) VALUES (?, ?)');
    for (const [id, n] of Object.entries(counters.order ?? {})) orderCount.run(Number(id), n);
  } finally {
    db.close();
  }
}

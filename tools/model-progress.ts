/**
 * How far a model file has got, read from the file itself, and how far the topics go (for code that
 * watches the service: tests, benchmarks); and a model file turned into one of the previous release.
 */
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { previousSchemaSqlFile, previousVersion } from '../projections/orders/compat/readable.js';
import { metaSql } from '../projections/orders/sql.js';
import type { KafkaPort } from '../src/kafka/port.js';
import { keysFile } from '../src/keys/keys-store.js';
import { ModelFiles } from '../src/read-model/files.js';

/**
 * Messages the model file has durably applied: the sum of the offsets stored with it (one message
 * per offset, as the producers here write without transactions). 0 while the file or its tables
 * do not exist yet.
 */
export function appliedMessagesIn(file: string): number {
  if (!existsSync(file)) return 0;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (
        db.prepare('SELECT coalesce(sum(next_offset), 0) AS n FROM consumer_offsets').get() as { n: number }
      ).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/**
 * The same for a data directory: its live orders model and its keys store, which together read
 * every topic once.
 */
export function appliedMessages(dataDir: string): number {
  const file = new ModelFiles(dataDir).currentFile();
  return (file === null ? 0 : appliedMessagesIn(file)) + appliedMessagesIn(keysFile(dataDir));
}

/**
 * Sum of the topics' end offsets: what `appliedMessages` reaches once the model has caught up. It
 * counts every message the topics hold, messages a producer wrote twice on a retry included.
 */
export async function topicEndOffsets(
  kafka: Pick<KafkaPort, 'endOffsets'>,
  topics: readonly string[],
): Promise<number> {
  return (await kafka.endOffsets(topics)).reduce((sum, p) => sum + p.end, 0);
}

/**
 * Creates `file` as the previous projection version created its files, from that version's
 * checked-in schema (`projections/orders/compat/v<N-1>.schema.sql`, never faked from today's),
 * holding the rows of the file `from` of the current version: each table both have, the columns
 * both have (the digests included, as the current version computes them). `counters`: version 3's
 * change counters (`org_changes`, `order_changes`), where the current version has digests; only a
 * file of version 3 has those tables.
 */
export function previousVersionFileFrom(
  from: string,
  file: string,
  counters: { org?: Record<number, number>; order?: Record<number, number> } = {},
): void {
  const db = new Database(file);
  try {
    db.exec(readFileSync(previousSchemaSqlFile, 'utf8'));
    db.prepare(metaSql.insertProjectionVersion).run(String(previousVersion));
    db.prepare('ATTACH DATABASE ? AS projected').run(from);
    const tables = db
      .prepare(
        `SELECT name FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
          AND name IN (SELECT name FROM projected.sqlite_schema WHERE type = 'table')`,
      )
      .pluck()
      .all() as string[];
    const shared = db
      .prepare(
        `SELECT name FROM pragma_table_info(?, 'main') WHERE name IN (SELECT name FROM pragma_table_info(?, 'projected'))`,
      )
      .pluck();
    for (const table of tables) {
      const columns = (shared.all(table, table) as string[]).map((c) => `"${c}"`).join(', ');
      if (columns === '') continue;
      const where = table === 'projection_meta' ? ` WHERE key <> 'projection_version'` : '';
      db.exec(`INSERT INTO main.${table} (${columns}) SELECT ${columns} FROM projected.${table}${where}`);
    }
    db.exec('DETACH DATABASE projected');
    for (const [table, key, given] of [
      ['org_changes', 'org_id', counters.org],
      ['order_changes', 'order_id', counters.order],
    ] as const) {
      const entries = Object.entries(given ?? {});
      if (entries.length === 0) continue;
      const insert = db.prepare(`INSERT INTO ${table} (${key}, changes) VALUES (?, ?)`);
      for (const [id, n] of entries) insert.run(Number(id), n);
    }
  } finally {
    db.close();
  }
}

/**
 * Turns a (closed) model file of this projection version into one of the previous version with the
 * same rows, as a replica of the previous release leaves it (`previousVersionFileFrom`).
 */
export function markPreviousProjectionVersion(file: string): void {
  const previous = `${file}.previous`;
  previousVersionFileFrom(file, previous);
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
  renameSync(previous, file);
}

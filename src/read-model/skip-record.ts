/**
 * The operators' skips of a data directory (`DATA_DIR/operator-skips.sqlite`): an append-only
 * record of facts, one row per skipped batch. SQLite gives what a rewritten JSON file could not:
 * a row is committed whole or not at all (a crash leaves the record as it was before or after it),
 * and two `skip-batch` runs at once are serialized by its lock (each waits up to `busyTimeoutMs`)
 * instead of writing over each other. Rows are only ever inserted: triggers refuse an UPDATE or a
 * DELETE, and the primary key names the batch, so recording the same batch again adds nothing.
 *
 * A directory written before this record kept its skips in `skipped-batches.json`. The first open
 * imports each entry that names a batch (a first offset and a last one) and renames the file to
 * `skipped-batches.json.imported`; an entry recorded where no model had a position (`from` null)
 * named no batch and is not imported (it is reported, and the build waiting at its batch says
 * which skip to record).
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { OperatorSkip } from './operator-skips.js';

export const skipRecordName = 'operator-skips.sqlite';
export const legacySkipsName = 'skipped-batches.json';
/** How long a writer waits for another one's transaction to end. */
const busyTimeoutMs = 30_000;

const schema = `
CREATE TABLE IF NOT EXISTS operator_skips (
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL CHECK (partition >= 0),
  first_offset INTEGER NOT NULL CHECK (first_offset >= 0),
  last_offset INTEGER NOT NULL CHECK (last_offset >= first_offset),
  reason TEXT NOT NULL,
  recorded_by TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (topic, partition, first_offset, last_offset)
) STRICT;
CREATE TRIGGER IF NOT EXISTS operator_skips_no_update BEFORE UPDATE ON operator_skips
  BEGIN SELECT RAISE(ABORT, 'operator skips are append-only'); END;
CREATE TRIGGER IF NOT EXISTS operator_skips_no_delete BEFORE DELETE ON operator_skips
  BEGIN SELECT RAISE(ABORT, 'operator skips are append-only'); END;
CREATE TABLE IF NOT EXISTS accepted_history_losses (
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL CHECK (partition >= 0),
  below INTEGER NOT NULL CHECK (below > 0),
  reason TEXT NOT NULL,
  recorded_by TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  PRIMARY KEY (topic, partition, below)
) STRICT;
CREATE TRIGGER IF NOT EXISTS accepted_history_losses_no_update BEFORE UPDATE ON accepted_history_losses
  BEGIN SELECT RAISE(ABORT, 'accepted history losses are append-only'); END;
CREATE TRIGGER IF NOT EXISTS accepted_history_losses_no_delete BEFORE DELETE ON accepted_history_losses
  BEGIN SELECT RAISE(ABORT, 'accepted history losses are append-only'); END;
`;

interface SkipRow {
  topic: string;
  partition: number;
  first_offset: number;
  last_offset: number;
  reason: string;
  recorded_by: string;
  recorded_at: string;
}

/** What the upgrade from `skipped-batches.json` did; reported once, by the process that did it. */
export interface LegacyImport {
  file: string;
  imported: number;
  /** entries that name no batch (no first offset), left out */
  leftOut: unknown[];
}

export interface SkipRecordOptions {
  /** told when this open imported `skipped-batches.json` */
  onImport?: (report: LegacyImport) => void;
}

/** A connection to the directory's record file (created if missing), in WAL mode, waiting for locks. */
export function openSkipRecord(dir: string): Database.Database {
  const db = new Database(join(dir, skipRecordName), { timeout: busyTimeoutMs });
  db.pragma('journal_mode = WAL');
  // A recorded skip must survive a power loss once the command has said it is recorded.
  db.pragma('synchronous = FULL');
  return db;
}

/** Runs `work` on the directory's record, created (and upgraded) on first use, closed afterwards. */
export function withRecord<T>(
  dir: string,
  options: SkipRecordOptions,
  work: (db: Database.Database) => T,
): T {
  const db = openSkipRecord(dir);
  try {
    const report = db
      .transaction(() => {
        db.exec(schema);
        return importLegacy(db, dir);
      })
      .immediate();
    if (report !== null) {
      renameLegacy(dir);
      options.onImport?.(report);
    }
    return work(db);
  } finally {
    db.close();
  }
}

/** The directory's skips, oldest first. */
export function recordedSkips(dir: string, options: SkipRecordOptions = {}): OperatorSkip[] {
  return withRecord(dir, options, (db) =>
    (db.prepare('SELECT * FROM operator_skips ORDER BY rowid').all() as SkipRow[]).map(skipOfRow),
  );
}

/**
 * Records a skip unless its batch is recorded already. Returns the skip as recorded (the earlier
 * one when there was one) and whether this call added it.
 */
export function recordSkip(
  dir: string,
  skip: OperatorSkip,
  options: SkipRecordOptions = {},
): { recorded: OperatorSkip; added: boolean } {
  return withRecord(dir, options, (db) =>
    db
      .transaction(() => {
        const added = insert(db, skip);
        const row = db
          .prepare(
            'SELECT * FROM operator_skips WHERE topic = ? AND partition = ? AND first_offset = ? AND last_offset = ?',
          )
          .get(skip.topic, skip.partition, skip.firstOffset, skip.lastOffset) as SkipRow;
        return { recorded: skipOfRow(row), added };
      })
      .immediate(),
  );
}

function insert(db: Database.Database, skip: OperatorSkip): boolean {
  return (
    db
      .prepare(
        `INSERT INTO operator_skips (topic, partition, first_offset, last_offset, reason, recorded_by, recorded_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      )
      .run(skip.topic, skip.partition, skip.firstOffset, skip.lastOffset, skip.reason, skip.by, skip.at)
      .changes === 1
  );
}

function skipOfRow(row: SkipRow): OperatorSkip {
  return {
    topic: row.topic,
    partition: row.partition,
    firstOffset: row.first_offset,
    lastOffset: row.last_offset,
    reason: row.reason,
    by: row.recorded_by,
    at: row.recorded_at,
  };
}

/**
 * Inside the opening transaction: imports `skipped-batches.json` when it is still there. Importing
 * twice adds nothing (a process that died between the commit and the rename leaves it to the next).
 */
function importLegacy(db: Database.Database, dir: string): LegacyImport | null {
  const file = join(dir, legacySkipsName);
  if (!existsSync(file)) return null;
  const entries = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  if (!Array.isArray(entries)) {
    throw new Error(
      `${file} is not a list of skipped batches: move it aside (its skips are then forgotten), or correct it.`,
    );
  }
  const report: LegacyImport = { file, imported: 0, leftOut: [] };
  for (const entry of entries) {
    const skip = legacySkip(entry);
    if (skip === null) report.leftOut.push(entry);
    else if (insert(db, skip)) report.imported += 1;
  }
  return report;
}

/**
 * An entry of `skipped-batches.json` as a skip: `from` (the position the served model moved from)
 * as the batch's first offset and `through` as its last. An entry whose `from` was not where the
 * batch began names no batch that exists, so it never applies and the build waits at the real one:
 * nothing readable is skipped because of it.
 */
export function legacySkip(entry: unknown): OperatorSkip | null {
  if (typeof entry !== 'object' || entry === null) return null;
  const e = entry as Record<string, unknown>;
  const { topic, partition, from, through, reason, by, at } = e;
  const offset = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
  if (typeof topic !== 'string' || !offset(partition) || !offset(from) || !offset(through)) return null;
  if (through < from) return null;
  return {
    topic,
    partition,
    firstOffset: from,
    lastOffset: through,
    reason: typeof reason === 'string' ? reason : '',
    by: typeof by === 'string' ? by : 'unknown',
    at: typeof at === 'string' ? at : '',
  };
}

/** Renames `skipped-batches.json` once imported; one renamed by another process already is no error. */
export function renameLegacy(dir: string): void {
  try {
    renameSync(join(dir, legacySkipsName), join(dir, `${legacySkipsName}.imported`));
  } catch (error) {
    // Another process imported and renamed it at the same time.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

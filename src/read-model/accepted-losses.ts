/**
 * The operators' acceptances of lost history (`accept-history-loss`), in the same append-only record
 * as their skips (`skip-record.ts`, table `accepted_history_losses`): who accepted that a partition's
 * events below an offset are gone for good, and why. Every build reads them before it starts
 * (`kafka/history.ts`).
 */
import type { AcceptedLoss } from '../kafka/history.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { skipRecordName, withRecord } from './skip-record.js';

interface LossRow {
  topic: string;
  partition: number;
  below: number;
  reason: string;
  recorded_by: string;
  recorded_at: string;
}

const lossOfRow = (row: LossRow): AcceptedLoss => ({
  topic: row.topic,
  partition: row.partition,
  below: row.below,
  reason: row.reason,
  by: row.recorded_by,
  at: row.recorded_at,
});

/**
 * The operators' acceptances of lost history (`accept-history-loss`), oldest first. Read without a
 * write lock (the lag check asks on the thread that answers requests): a record not written yet, or
 * one without the table yet, holds none.
 */
export function recordedLosses(dir: string): AcceptedLoss[] {
  const path = join(dir, skipRecordName);
  if (!existsSync(path)) return [];
  const db = new Database(path, { readonly: true, fileMustExist: true, timeout: 1000 });
  try {
    const table = db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'accepted_history_losses'")
      .get();
    if (table === undefined) return [];
    return (db.prepare('SELECT * FROM accepted_history_losses ORDER BY rowid').all() as LossRow[]).map(
      lossOfRow,
    );
  } finally {
    db.close();
  }
}

/** Records an acceptance unless the same one is recorded already; returns whether this call added it. */
export function recordLoss(dir: string, loss: AcceptedLoss): boolean {
  return withRecord(
    dir,
    {},
    (db) =>
      db
        .prepare(
          `INSERT INTO accepted_history_losses (topic, partition, below, reason, recorded_by, recorded_at)
           VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        )
        .run(loss.topic, loss.partition, loss.below, loss.reason, loss.by, loss.at).changes === 1,
  );
}

/**
 * The operators' acceptances of lost history (`accept-history-loss`), in the same append-only record
 * as their skips (`skip-record.ts`, table `accepted_history_losses`): who accepted that a partition's
 * events below an offset are gone for good, and why. Every build reads them before it starts
 * (`kafka/history.ts`).
 */
import type { AcceptedLoss } from '../kafka/history.js';
import { withRecord } from './skip-record.js';

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

/** The operators' acceptances of lost history (`accept-history-loss`), oldest first. */
export function recordedLosses(dir: string): AcceptedLoss[] {
  return withRecord(dir, {}, (db) =>
    (db.prepare('SELECT * FROM accepted_history_losses ORDER BY rowid').all() as LossRow[]).map(lossOfRow),
  );
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

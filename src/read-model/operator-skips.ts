/**
 * Operators' skips (`skip-batch`): what one is, which unreadable batch it covers, and how a model's
 * dead letters record it and give it back. `ModelFiles` keeps a directory's skips; the writer
 * applies one.
 */
import { operatorSql } from '../../projections/orders/sql.js';
import type { ReadModelDatabase } from './database.js';

/**
 * An operator's decision to move a partition past offsets that can never be read (`skip-batch`):
 * the served model and a proposal are moved at once, and every build from the topics (a rebuild,
 * the service's own rebuild after a projection-version change) moves past them when it meets an
 * unreadable batch among them, recording the same dead letter.
 */
export interface OperatorSkip {
  topic: string;
  partition: number;
  /** the first offset skipped (the served model's position then), or null when no model had one */
  from: number | null;
  through: number;
  reason: string;
  /** user@host */
  by: string;
  /** ISO time of the decision */
  at: string;
}

/** The recorded skip that an unreadable batch (`offset`..`lastOffset`) falls in, if any. */
export function skipCovering(
  skips: readonly OperatorSkip[],
  batch: { topic: string; partition: number; offset: number; lastOffset: number | null },
): OperatorSkip | undefined {
  return skips.find(
    (s) =>
      s.topic === batch.topic &&
      s.partition === batch.partition &&
      batch.offset <= s.through &&
      (s.from === null || (batch.lastOffset ?? batch.offset) >= s.from),
  );
}

export function skipDetail(from: number, skip: Pick<OperatorSkip, 'through' | 'reason' | 'by'>): string {
  const offsets = from === skip.through ? `offset ${from}` : `offsets ${from}–${skip.through}`;
  return `${offsets} skipped by ${skip.by}: ${skip.reason}`;
}
const skipDetailPattern = /^offsets? (\d+)(?:–(\d+))? skipped by (\S+): ([\s\S]*)$/;

/**
 * The operators' skips a model records as dead letters (`skipped_by_operator`), so that a snapshot
 * carries them to a new replica's data directory and that replica's rebuilds move past them too.
 */
export function operatorSkipsIn(db: ReadModelDatabase): OperatorSkip[] {
  const rows = db.prepare(operatorSql.operatorSkips).all() as {
    topic: string;
    partition: number;
    offset: number;
    detail: string;
    recorded_at: string;
  }[];
  return rows.flatMap((row) => {
    const parsed = skipDetailPattern.exec(row.detail);
    if (parsed === null) return [];
    const [, first = '', last, by = '', reason = ''] = parsed;
    const from = Number(first);
    const through = last === undefined ? from : Number(last);
    return [{ topic: row.topic, partition: row.partition, from, through, by, reason, at: row.recorded_at }];
  });
}

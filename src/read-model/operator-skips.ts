/**
 * Operators' skips (`skip-batch`): what one is, which unreadable batch it names, where a model
 * stands against it, and how a model's dead letters record it and give it back. `skip-record.ts`
 * keeps a directory's skips; the writer applies one when its projector meets the batch.
 */
import { operatorSql } from '../../projections/orders/sql.js';
import type { UnreadableBatch } from '../kafka/port.js';
import type { ReadModelDatabase } from './database.js';

/**
 * An operator's decision that one record batch of a partition can never be read and is to be moved
 * past (`skip-batch`): a fact about the log, recorded once. Every build that meets exactly this
 * batch (same topic, partition, first and last offset) moves past it with a `skipped_by_operator`
 * dead letter of its own; a build never moves past anything else because of it.
 */
export interface OperatorSkip {
  topic: string;
  partition: number;
  /** where a consumer stops at the batch: the offset /readyz and the log name (`UnreadableBatch.offset`) */
  firstOffset: number;
  /** the batch's last offset, read from its header (`UnreadableBatch.lastOffset`) */
  lastOffset: number;
  reason: string;
  /** user@host */
  by: string;
  /** ISO time of the decision */
  at: string;
}

/** The batch a skip names. */
export type SkippedBatch = Pick<OperatorSkip, 'topic' | 'partition' | 'firstOffset' | 'lastOffset'>;

/**
 * The recorded skip that names exactly the unreadable batch a consumer met, if any. A batch whose
 * header could not be read (`lastOffset` null) is never skipped: where it ends is unknown, so no
 * recorded fact can be shown to be about it, and the partition waits.
 */
export function skipOf(
  skips: readonly OperatorSkip[],
  batch: Pick<UnreadableBatch, 'topic' | 'partition' | 'offset' | 'lastOffset'>,
): OperatorSkip | undefined {
  return skips.find(
    (s) =>
      s.topic === batch.topic &&
      s.partition === batch.partition &&
      s.firstOffset === batch.offset &&
      s.lastOffset === batch.lastOffset,
  );
}

/**
 * Where a model stands on the skipped batch's partition, given its stored position (undefined: it
 * has not read the partition yet): `at` the batch (it moves past it at its next attempt to read
 * it), `before` it (it moves past it when it gets there), `past` it, or `inside` it (a position no
 * build reaches by reading: it will never meet a batch starting at the skip's first offset).
 */
export type ModelPlace = 'not read yet' | 'before' | 'at' | 'inside' | 'past';

export function placeOf(position: number | undefined, batch: SkippedBatch): ModelPlace {
  if (position === undefined) return 'not read yet';
  if (position < batch.firstOffset) return 'before';
  if (position === batch.firstOffset) return 'at';
  return position > batch.lastOffset ? 'past' : 'inside';
}

/** What a skip an operator asks for must be; the first thing wrong, or null. */
export function skipProblem(
  skip: Pick<OperatorSkip, 'topic' | 'firstOffset' | 'lastOffset' | 'reason'>,
  topics: readonly string[],
): string | null {
  if (!topics.includes(skip.topic)) {
    return `${skip.topic} is not one of the configured topics (${topics.join(', ')}).`;
  }
  if (skip.lastOffset < skip.firstOffset) {
    return `--through ${skip.lastOffset} is before --from ${skip.firstOffset}: give the batch's first offset (where the partition stopped) and its last offset, as /readyz and the log name them.`;
  }
  if (skip.reason.trim() === '') return '--reason is required: say why';
  if (skip.reason.length > maxReasonLength) {
    return `--reason is ${skip.reason.length} characters long; at most ${maxReasonLength}, so that the dead letter keeps all of it.`;
  }
  return null;
}

/** A reason longer than this would not fit in a dead letter's detail whole. */
export const maxReasonLength = 300;

/** The dead letter's detail: what was skipped, who skipped it and why. */
export function skipDetail(skip: Pick<OperatorSkip, 'firstOffset' | 'lastOffset' | 'reason' | 'by'>): string {
  const offsets =
    skip.firstOffset === skip.lastOffset
      ? `offset ${skip.firstOffset}`
      : `offsets ${skip.firstOffset}–${skip.lastOffset}`;
  return `${offsets} skipped by ${skip.by}: ${skip.reason}`;
}

/**
 * The operators' skips a model records as dead letters (`skipped_by_operator`), so that a snapshot
 * carries them to a new replica's data directory and that replica's builds move past the same
 * batches. A detail that does not read as one is left out.
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
    // what skipDetail writes
    const parsed = /^offsets? (\d+)(?:–(\d+))? skipped by (\S+): ([\s\S]*)$/.exec(row.detail);
    if (parsed === null) return [];
    // the pattern's groups all match but the last offset's
    const [, first, last, by, reason] = parsed as unknown as [
      string,
      string,
      string | undefined,
      string,
      string,
    ];
    const firstOffset = Number(first);
    const lastOffset = last === undefined ? firstOffset : Number(last);
    return [
      {
        topic: row.topic,
        partition: row.partition,
        firstOffset,
        lastOffset,
        by,
        reason,
        at: row.recorded_at,
      },
    ];
  });
}

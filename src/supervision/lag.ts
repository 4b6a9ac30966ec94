/**
 * A consumer's lag, as the served model's readiness and the keys store's both measure it: end offset
 * minus the position stored with the file, per partition.
 */
import { type PartitionEnds, type UnreadableBatch, offsetKey } from '../kafka/port.js';

export interface PartitionLag {
  topic: string;
  partition: number;
  /** next offset stored with the model (the log start when never read) */
  nextOffset: number;
  /** the partition's end offset */
  endOffset: number;
  lag: number;
}

export interface LagMeasure {
  at: number;
  partitions: PartitionLag[];
}

/** Lag per partition: end offset minus the position stored with the model (the log start when never read). */
export function lagOf(
  ends: readonly PartitionEnds[],
  positions: ReadonlyMap<string, number>,
): PartitionLag[] {
  return ends.map((end) => {
    const nextOffset = positions.get(offsetKey(end.topic, end.partition)) ?? end.start;
    return {
      topic: end.topic,
      partition: end.partition,
      nextOffset,
      endOffset: end.end,
      lag: Math.max(0, end.end - nextOffset),
    };
  });
}

export function totalLag(lag: LagMeasure | null): number | null {
  return lag === null ? null : lag.partitions.reduce((sum, p) => sum + p.lag, 0);
}

/** What an operator runs to move past a batch for good; nothing for one whose end is unknown. */
export function skipHint(
  batch: Pick<UnreadableBatch, 'topic' | 'partition' | 'offset' | 'lastOffset'>,
): string {
  return batch.lastOffset === null
    ? ''
    : `; to move past it for good: skip-batch --topic ${batch.topic} --partition ${batch.partition} --from ${batch.offset} --through ${batch.lastOffset} --reason TEXT`;
}

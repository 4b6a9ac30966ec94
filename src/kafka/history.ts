/**
 * Whether the log still holds what a build needs: the one rule that keeps a model from being built,
 * or moved on, from a log that has lost events it needs.
 *
 * A build reads each partition from where its model stands: its stored position, or, for a
 * partition it has not read, offset 0, the first event ever written (topics start at 0; a log that
 * starts later has lost its first events to retention or `deleteRecords`). The log must still hold
 * that offset: its start at or below it. An operator may accept that history below an offset is gone
 * (`accept-history-loss`, recorded with who and why): then a log starting at or below that offset
 * is enough. A topic whose id (Kafka's topic UUID) is not the one the model recorded, or a stored
 * position past the log's end, belongs to another log (the topic was deleted and created again, or
 * this is another cluster): reading on would take the new log's first events for ones already
 * applied, so that is refused too, and no acceptance covers it.
 *
 * Every consumption of every model checks this before its first fetch (`runProjection`): the
 * served projector, a candidate, a rebuild, a catch-up by replay and the keys store. A build the
 * rule refuses never starts, so no model missing history is ever served or switched to.
 */
import { offsetKey, type PartitionEnds } from './port.js';

/** An operator's acceptance that a partition's history below `below` is gone for good. */
export interface AcceptedLoss {
  topic: string;
  partition: number;
  /** builds may start at a log start up to this offset */
  below: number;
  reason: string;
  by: string;
  at: string;
}

export interface HistoryGap {
  topic: string;
  partition: number;
  /** where the log starts and ends now */
  logStart: number;
  logEnd: number;
  /** the offset the model must read from: its stored position, or 0 for a partition it has not read */
  needed: number;
  /**
   * `lost`: the log starts past `needed`; `past-end`: the model's position lies past the log's end;
   * `other-topic`: the topic has another id than the one the model was built from
   */
  kind: 'lost' | 'past-end' | 'other-topic';
}

/** The offset each partition's log must still hold for a model at `stored` (undefined: not read yet). */
export function neededOffset(stored: number | undefined): number {
  return stored ?? 0;
}

/**
 * The partitions whose log cannot give a model at `stored` what it needs: empty when the build may
 * go on. `accepted` are the operators' acceptances of lost history.
 */
export function historyGaps(
  ends: readonly PartitionEnds[],
  stored: (topic: string, partition: number) => number | undefined,
  accepted: readonly AcceptedLoss[] = [],
  /** each topic's id as the model recorded it, and as the broker names it now (unknown: not compared) */
  topicIds: { recorded: ReadonlyMap<string, string>; current: ReadonlyMap<string, string> } = {
    recorded: new Map(),
    current: new Map(),
  },
): HistoryGap[] {
  const floors = new Map<string, number>();
  for (const loss of accepted) {
    const key = offsetKey(loss.topic, loss.partition);
    floors.set(key, Math.max(floors.get(key) ?? 0, loss.below));
  }
  const gaps: HistoryGap[] = [];
  for (const end of ends) {
    const position = stored(end.topic, end.partition);
    const needed = neededOffset(position);
    const gap = { topic: end.topic, partition: end.partition, logStart: end.start, logEnd: end.end, needed };
    const recorded = topicIds.recorded.get(end.topic);
    const current = topicIds.current.get(end.topic);
    if (recorded !== undefined && current !== undefined && recorded !== current)
      gaps.push({ ...gap, kind: 'other-topic' });
    else if (position !== undefined && position > end.end) gaps.push({ ...gap, kind: 'past-end' });
    else if (end.start > needed && end.start > (floors.get(offsetKey(end.topic, end.partition)) ?? 0))
      gaps.push({ ...gap, kind: 'lost' });
  }
  return gaps;
}

/** One line per gap, naming the topic, the partition, the log and what the model needs, and the remedy. */
export function describeGap(gap: HistoryGap): string {
  const where = `${gap.topic} partition ${gap.partition}`;
  if (gap.kind === 'other-topic') {
    return `${where}: the topic has another id than the one the model was built from: it was deleted and created again, or this is another cluster; point KAFKA_BROKERS at the right cluster, or start the replica on an empty DATA_DIR (docs/operations.md, "Positions past the end of a topic")`;
  }
  if (gap.kind === 'past-end') {
    return `${where}: the model has read up to offset ${gap.needed}, past the log's end ${gap.logEnd}: the topic is not the one the model was built from (deleted and created again, or another cluster); point KAFKA_BROKERS at the right cluster, or start the replica on an empty DATA_DIR (docs/operations.md, "Positions past the end of a topic")`;
  }
  return `${where}: the log starts at offset ${gap.logStart}, and the model needs it from offset ${gap.needed}: events ${gap.needed}–${gap.logStart - 1} are gone from the topic; restore a snapshot, or accept the loss with accept-history-loss --topic ${gap.topic} --partition ${gap.partition} --below ${gap.logStart} --reason TEXT (docs/operations.md, "A build refused for missing history")`;
}

/** How the error of a refused build begins, also where it crossed a thread as text. */
export const historyMissingMessage = 'the log does not hold what this model needs';

/** A build refused by the rule: the log no longer holds what it needs. */
export class HistoryMissing extends Error {
  readonly code = 'HISTORY_MISSING';

  constructor(readonly gaps: readonly HistoryGap[]) {
    super(`${historyMissingMessage}: ${gaps.map(describeGap).join('; ')}`);
  }
}

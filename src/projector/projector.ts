/**
 * The projection loop: consumes every partition of its streams' topics (`subscriptions.ts`) through the Kafka port and hands
 * each batch to the writer, which commits its effects and the position after it in one transaction.
 * Every (re)start reads from the positions stored with the model, so the group's own offsets are
 * never trusted.
 */
import { streamRoles, type TopicRole } from '../../schemas/streams.js';
import { roleOfTopic } from '../config.js';
import { historyGaps, HistoryMissing, type AcceptedLoss } from '../kafka/history.js';
import type { Consumption, KafkaPort, PartitionEnds, UnreadableBatch } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { skipOf, type OperatorSkip } from '../read-model/operator-skips.js';
import type { BatchOutcome, ReadModelWriter } from '../read-model/writer.js';
import { decodeBatch } from './decode.js';
import { subscribedTopics } from './subscriptions.js';

/** An applied batch: where it was, what it did, and when (epoch milliseconds, for its span). */
export interface AppliedBatchFacts {
  topic: string;
  partition: number;
  outcome: BatchOutcome;
  firstOffset?: number;
  lastOffset?: number;
  messages: number;
  startedAt: number;
  endedAt: number;
}

export interface ProjectionOptions {
  port: Pick<KafkaPort, 'consume' | 'endOffsets' | 'topicIds'>;
  groupId: string;
  topics: Record<TopicRole, string>;
  /** the topics to consume, by role (default: every declared stream) */
  roles?: readonly TopicRole[];
  writer: ReadModelWriter;
  logger: Logger;
  onBatch?: (batch: AppliedBatchFacts) => void;
  onUnreadable?: (batch: UnreadableBatch) => void;
  /** the batches operators have skipped (`skip-batch`), read again whenever a batch cannot be read */
  operatorSkips?: () => readonly OperatorSkip[];
  /** the operators' acceptances of lost history (`accept-history-loss`), read at every start */
  acceptedLosses?: () => readonly AcceptedLoss[];
  /** a message's value beyond this is dead-lettered as too_large (default `defaultMessageMaxBytes`) */
  maxMessageBytes?: number;
  /** a fetch came back from the broker (`ConsumeOptions.onFetched`) */
  onFetched?: () => void;
  maxWaitMs?: number;
  /** runs after each applied batch of messages, given when it was handed over; the next batch waits for it (pacing) */
  afterBatch?: (startedAt: number) => Promise<void> | void;
}

/**
 * Starts consuming into the writer's model, from its stored positions. Before the first fetch the
 * log must hold what the model needs (`historyGaps`, the rule of `kafka/history.ts`): otherwise it
 * throws `HistoryMissing` and nothing is read. A partition the model has not read starts at its log
 * start, as the check just read it.
 */
export async function runProjection(options: ProjectionOptions): Promise<Consumption> {
  const { writer, logger } = options;
  const roleOf = roleOfTopic(options.topics);
  const topics = subscribedTopics(options.topics, options.roles ?? streamRoles);
  const [ends, current] = await Promise.all([options.port.endOffsets(topics), options.port.topicIds(topics)]);
  const stored = (topic: string, partition: number): number | undefined =>
    writer.storedOffset(topic, partition);
  const accepted = options.acceptedLosses?.() ?? [];
  const gaps = historyGaps(ends, stored, accepted, { recorded: writer.topicIds.recorded(), current });
  if (gaps.length > 0) throw new HistoryMissing(gaps);
  writer.topicIds.record(current);
  for (const end of ends) {
    const next = moveOverAcceptedLoss(writer, end, accepted, logger);
    if (next !== null) reportSkip(options, end.topic, end.partition, next);
  }
  return options.port.consume({
    groupId: options.groupId,
    topics,
    startAt: (topic, partition) => stored(topic, partition),
    ...(options.onFetched === undefined ? {} : { onFetched: options.onFetched }),
    ...(options.maxWaitMs === undefined ? {} : { maxWaitMs: options.maxWaitMs }),
    onUnreadable: (batch) => {
      const skip = skipOf(recordedSkips(options), batch);
      if (skip !== undefined) {
        const next = writer.skipByOperator(skip);
        if (next !== null) {
          logger.warn(
            { ...batch, next, by: skip.by, reason: skip.reason },
            'moving past a record batch an operator skipped',
          );
          reportSkip(options, batch.topic, batch.partition, next);
          return next;
        }
        // The consumer stopped where the skip's batch begins, and the model says it is elsewhere:
        // moving it would skip offsets nobody skipped.
        logger.error(
          { ...batch, position: writer.storedOffset(batch.topic, batch.partition) },
          'a recorded skip names this batch, but the model is not at it; it is not moved',
        );
      }
      logger.error(batch, 'a record batch cannot be read; the partition waits, every other one goes on');
      options.onUnreadable?.(batch);
      return undefined;
    },
    onBatch: (batch) => {
      const startedAt = performance.now();
      const role = roleOf(batch.topic);
      if (role === undefined) throw new Error(`topic ${batch.topic} is not one of the configured topics`);
      const outcome = writer.applyBatch(
        batch.topic,
        batch.partition,
        decodeBatch(role, batch.messages, options.maxMessageBytes),
        batch.next,
      );
      if (outcome.deadLettered > 0) {
        logger.warn(
          {
            topic: batch.topic,
            partition: batch.partition,
            deadLetters: outcome.deadLettersByReason,
            firstOffset: batch.messages[0]?.offset,
            next: batch.next,
          },
          'dead-lettered invalid messages',
        );
      }
      if (outcome.nextOffset !== null) {
        const first = batch.messages[0];
        const last = batch.messages.at(-1);
        options.onBatch?.({
          topic: batch.topic,
          partition: batch.partition,
          outcome,
          ...(first === undefined ? {} : { firstOffset: Number(first.offset) }),
          ...(last === undefined ? {} : { lastOffset: Number(last.offset) }),
          messages: batch.messages.length,
          startedAt: performance.timeOrigin + startedAt,
          endedAt: performance.timeOrigin + performance.now(),
        });
      }
      // A batch of only transaction markers comes from an event nobody waits for: no pacing there.
      return batch.messages.length === 0 ? undefined : options.afterBatch?.(startedAt);
    },
  });
}

/**
 * Where the log starts past what the model needs and an operator accepted the loss (the check let
 * it through), the model moves to the log start as over a skipped batch: a `skipped_by_operator`
 * dead letter at its position says what, who and why. The model then starts where the log does.
 */
function moveOverAcceptedLoss(
  writer: ReadModelWriter,
  end: PartitionEnds,
  accepted: readonly AcceptedLoss[],
  logger: Logger,
): number | null {
  const from = writer.storedOffset(end.topic, end.partition) ?? 0;
  if (end.start <= from) return null;
  const loss = accepted
    .filter((a) => a.topic === end.topic && a.partition === end.partition && a.below >= end.start)
    .at(0);
  if (loss === undefined) return null;
  const next = writer.skipByOperator({
    topic: end.topic,
    partition: end.partition,
    firstOffset: from,
    lastOffset: end.start - 1,
    reason: `history accepted as lost below offset ${loss.below}: ${loss.reason}`,
    by: loss.by,
    at: loss.at,
  });
  logger.warn(
    { topic: end.topic, partition: end.partition, from, to: end.start, by: loss.by, reason: loss.reason },
    'moving over events an operator accepted as lost',
  );
  return next;
}

/** An operator's move of a partition to `next`, reported as a batch of one dead letter. */
function reportSkip(options: ProjectionOptions, topic: string, partition: number, next: number): void {
  const at = performance.timeOrigin + performance.now();
  options.onBatch?.({
    topic,
    partition,
    messages: 0,
    startedAt: at,
    endedAt: at,
    outcome: {
      applied: 0,
      unchanged: 0,
      deadLettered: 1,
      alreadyApplied: 0,
      appliedByType: {},
      deadLettersByReason: { skipped_by_operator: 1 },
      nextOffset: next,
      durationMs: 0,
    },
  });
}

/** The skips operators have recorded; an unreadable record of them is logged and counts as none. */
function recordedSkips(options: ProjectionOptions): readonly OperatorSkip[] {
  try {
    // Stryker disable next-line ArrayDeclaration: equivalent: skipOf finds no skip in a list of a string, as in an empty one
    return options.operatorSkips?.() ?? [];
  } catch (error) {
    options.logger.error({ err: error }, 'the batches operators skipped cannot be read');
    // Stryker disable next-line ArrayDeclaration: equivalent: skipOf finds no skip in a list of a string, as in an empty one
    return [];
  }
}

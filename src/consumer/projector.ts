/**
 * The Kafka side of the projection: one consumer that reads every partition
 * of the four topics and hands each batch to the writer, which commits the
 * effects and the offsets together. The group's committed offsets are only
 * advisory: every (re)assignment seeks to the offsets stored in SQLite.
 */
import type { Consumer, Kafka } from 'kafkajs';
import type { TopicRole } from '../../schemas/events.js';
import type { Logger } from '../logger.js';
import type { BatchOutcome, ReadModelWriter } from '../read-model/writer.js';

export interface ProjectorOptions {
  kafka: Kafka;
  groupId: string;
  sessionTimeoutMs: number;
  topics: Record<TopicRole, string>;
  writer: ReadModelWriter;
  logger: Logger;
  onBatch?: (batch: {
    topic: string;
    partition: number;
    highWatermark: string;
    outcome: BatchOutcome;
  }) => void;
}

export interface Projector {
  consumer: Consumer;
  stop(): Promise<void>;
}

export async function startProjector(options: ProjectorOptions): Promise<Projector> {
  const { kafka, writer, logger } = options;
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: Math.max(500, Math.floor(options.sessionTimeoutMs / 5)),
    allowAutoTopicCreation: false,
    // One fetch of at most 4 MiB keeps the decoded batch in memory small (kafkajs defaults to 10 MiB).
    maxBytes: 4 * 1024 * 1024,
  });

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) {
        // Offset 0 on a partition whose log start is later resolves to the earliest offset (fromBeginning).
        const offset = writer.storedOffset(topic, partition) ?? 0;
        consumer.seek({ topic, partition, offset: String(offset) });
      }
    }
    logger.info(
      { groupId: options.groupId, assignment: payload.memberAssignment },
      'joined the consumer group',
    );
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    logger.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
  });

  await consumer.connect();
  await consumer.subscribe({ topics: Object.values(options.topics), fromBeginning: true });
  await consumer.run({
    autoCommit: true,
    eachBatchAutoResolve: false,
    eachBatch: async (payload) => {
      const { batch } = payload;
      if (!payload.isRunning() || payload.isStale() || batch.messages.length === 0) return;
      const batchLogger = logger.child({ topic: batch.topic, partition: batch.partition });
      const outcome = writer.applyBatch(batch.topic, batch.partition, batch.messages);
      if (outcome.deadLettered > 0) {
        batchLogger.warn(
          {
            deadLetters: outcome.deadLettersByReason,
            firstOffset: batch.firstOffset(),
            lastOffset: batch.lastOffset(),
          },
          'dead-lettered invalid messages',
        );
      }
      options.onBatch?.({
        topic: batch.topic,
        partition: batch.partition,
        highWatermark: batch.highWatermark,
        outcome,
      });
      payload.resolveOffset(batch.lastOffset());
      await payload.heartbeat();
    },
  });

  return {
    consumer,
    stop: async () => {
      await consumer.disconnect();
    },
  };
}

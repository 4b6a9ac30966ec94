/**
 * The consuming side of the kafkajs port: a consumer in its group that seeks every assigned partition
 * to the position its owner stored, hands each batch over, and reports its failure instead of
 * restarting itself.
 */
import type { Kafka } from './kafkajs-client.js';
import type { Logger } from '../logger.js';
import { boundedGoodbye, goodbyeTimeoutMs } from './goodbye.js';
import { UnreadablePartitions } from './kafkajs-unreadable.js';
import type { ConsumeOptions, Consumption } from './port.js';

export interface ConsumerSettings {
  sessionTimeoutMs: number;
  logger: Logger;
  /** deletes the group once the consumer has left it (best effort) */
  deleteGroup?: (groupId: string) => Promise<void>;
}

export async function startConsumption(
  kafka: Kafka,
  settings: ConsumerSettings,
  consume: ConsumeOptions,
): Promise<Consumption> {
  const logger = settings.logger;
  const consumer = kafka.consumer({
    groupId: consume.groupId,
    sessionTimeout: settings.sessionTimeoutMs,
    heartbeatInterval: Math.max(500, Math.floor(settings.sessionTimeoutMs / 5)),
    allowAutoTopicCreation: false,
    // One fetch of at most 4 MiB keeps the decoded batch in memory small (kafkajs defaults to 10 MiB).
    maxBytes: 4 * 1024 * 1024,
    readUncommitted: false,
    ...(consume.maxWaitMs === undefined ? {} : { maxWaitTimeInMs: consume.maxWaitMs }),
    // The service's supervisor restarts a failed consumer with backoff and counts it; kafkajs must not
    // restart it behind the supervisor's back.
    retry: { restartOnFailure: () => Promise.resolve(false) },
  });
  let stopping = false;
  const unreadable = new UnreadablePartitions(consumer, consume);
  // The patched kafkajs pauses the partition and reports the batch as a typed error (README, "Requirements").
  consumer.on(consumer.events.UNREADABLE_BATCH, ({ payload: { error } }) => {
    if (!stopping) unreadable.report(error);
  });
  let fail: (error: Error) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const failWith = (error: unknown): void => {
    if (!stopping) fail(error instanceof Error ? error : new Error(String(error)));
  };

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) {
        // The owner's position (a partition it has not read starts at the log start its check read);
        // one the log no longer holds fails the consumer (the patched client resets no offset).
        consumer.seek({ topic, partition, offset: String(consume.startAt(topic, partition) ?? 0) });
      }
    }
    logger.info(
      { groupId: consume.groupId, assignment: payload.memberAssignment },
      'joined the consumer group',
    );
  });
  if (consume.onFetched !== undefined) {
    const fetched = consume.onFetched;
    consumer.on(consumer.events.FETCH, () => {
      if (!stopping) fetched();
    });
  }
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    logger.error({ err: payload.error, groupId: consume.groupId }, 'consumer failed');
    failWith(payload.error);
  });
  // A fetch that held only what no consumer receives (transaction markers, aborted messages) never
  // reaches eachBatch; its position still moves, and the model must store it to reach the end offset.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize !== 0 || stopping) return;
    try {
      const handled = consume.onBatch({
        topic: payload.topic,
        partition: payload.partition,
        messages: [],
        next: Number(payload.lastOffset) + 1,
      });
      if (handled instanceof Promise) handled.catch(failWith);
    } catch (error) {
      failWith(error);
    }
  });

  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...consume.topics], fromBeginning: true });
    await consumer.run({
      // Positions live in the model (SQLite): the group commits nothing, so the broker keeps no
      // offsets of it (for offsets.retention.minutes, 7 days by default) once it is empty.
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        const { batch } = payload;
        // After a stop that did not wait for the broker, nothing is handed over any more.
        if (stopping || !payload.isRunning() || payload.isStale() || batch.messages.length === 0) return;
        unreadable.readAgain(batch.topic, batch.partition);
        try {
          await consume.onBatch({
            topic: batch.topic,
            partition: batch.partition,
            messages: batch.messages,
            next: Number(batch.lastOffset()) + 1,
          });
        } catch (error) {
          // A batch that cannot be applied is a fault of this service, not of the broker: stop and
          // let the supervisor restart from the stored positions.
          failWith(error);
          throw error;
        }
        payload.resolveOffset(batch.lastOffset());
        await payload.heartbeat();
      },
    });
  } catch (error) {
    stopping = true;
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }

  return {
    failed,
    pause: () => consumer.pause(consume.topics.map((topic) => ({ topic }))),
    stop: async () => {
      stopping = true;
      unreadable.stop();
      const leaving = consumer.disconnect();
      const { deleteGroup } = settings;
      // Once the consumer has left, its group is empty and holds no offsets: deleting it leaves
      // nothing of this start on the broker, even when the stop has stopped waiting for the goodbye.
      await boundedGoodbye(
        deleteGroup === undefined ? leaving : leaving.then(() => deleteGroup(consume.groupId)),
        goodbyeTimeoutMs,
        logger,
        `leaving group ${consume.groupId}`,
      );
    },
  };
}

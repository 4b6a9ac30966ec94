/**
 * The Kafka port implemented with kafkajs: the only module that imports the client library, so a
 * maintained client can replace it here without touching the rest of the service.
 */
import kafkajs, { Kafka, logLevel, Partitioners, type Admin, type Producer, type logCreator } from 'kafkajs';
import { backoffDelay, type Backoff } from '../backoff.js';
import type { Logger } from '../logger.js';
import { kafkaCodecs, limitInflatedBatches, type CodecName } from './codecs.js';
import type { ConsumeOptions, Consumption, KafkaPort, OutgoingMessage, PartitionEnds } from './port.js';

export interface KafkajsPortOptions {
  brokers: readonly string[];
  clientId: string;
  sessionTimeoutMs: number;
  logger: Logger;
  /** kafkajs's own retries per request before an operation fails (its default: 5) */
  retries?: number;
  /** the codec of the batches `publish` sends (default none) */
  compression?: CodecName;
  /** what a record batch may inflate to (default `defaultBatchInflatedBytes`) */
  maxInflatedBatchBytes?: number;
}

// Every codec a producer may use is registered here, once per module instance (the projector's worker
// thread has its own): kafkajs reads only gzip by itself, and with no bound on what a batch inflates to. Node's ESM loader does not see
// these two among kafkajs's CommonJS named exports, hence the default import.
// off the default export: kafkajs's errors (the patch's KafkaJSUnreadableBatch among them) are spread into
// its exports, which Node's detection of CommonJS named exports does not see
const { CompressionCodecs, CompressionTypes, KafkaJSUnreadableBatch } = kafkajs;
CompressionCodecs[CompressionTypes.GZIP] = kafkaCodecs[1];
CompressionCodecs[CompressionTypes.Snappy] = kafkaCodecs[2];
CompressionCodecs[CompressionTypes.LZ4] = kafkaCodecs[3];
CompressionCodecs[CompressionTypes.ZSTD] = kafkaCodecs[4];

/** kafkajs's name for a codec (for code that drives kafkajs directly, such as benchmarks). */
export const compressionOf: Record<CodecName, kafkajs.CompressionTypes> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

/**
 * How long a stop waits for the broker to take the goodbye (leaving the group, disconnecting): a
 * broker that is gone or frozen must not hold up a service's shutdown. The model needs no goodbye:
 * its positions are stored with it.
 */
const goodbyeTimeoutMs = 2000;

/** `done`, or nothing once `ms` have passed, whichever comes first; a failure of `done` is logged. */
async function boundedGoodbye(done: Promise<void>, ms: number, logger: Logger, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      logger.warn({ waitedMs: ms }, `${what}: the broker did not answer; going on without it`);
      resolve();
    }, ms);
  });
  try {
    await Promise.race([done.catch((error: unknown) => logger.warn({ err: error }, `${what} failed`)), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Delays before fetching an unreadable partition again: doubling from 1 s, at most 10 s. */
const unreadableRetry = { initialMs: 1000, maxMs: 10_000 } satisfies Backoff;

export function kafkajsPort(options: KafkajsPortOptions): KafkaPort {
  if (options.maxInflatedBatchBytes !== undefined) limitInflatedBatches(options.maxInflatedBatchBytes);
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logCreator: kafkaLogCreator(options.logger),
    ...(options.retries === undefined ? {} : { retry: { retries: options.retries } }),
  });
  let admin: Promise<Admin> | null = null;
  let producer: Promise<Producer> | null = null;
  const connectedAdmin = (): Promise<Admin> => {
    admin ??= connectOnce(kafka.admin(), () => (admin = null));
    return admin;
  };
  const connectedProducer = (): Promise<Producer> => {
    producer ??= connectOnce(
      kafka.producer({
        allowAutoTopicCreation: false,
        idempotent: true,
        maxInFlightRequests: 1,
        createPartitioner: Partitioners.DefaultPartitioner,
      }),
      () => (producer = null),
    );
    return producer;
  };

  return {
    consume: (consume) => startConsumption(kafka, options, consume),
    endOffsets: async (topics) => {
      const client = await connectedAdmin();
      const ends: PartitionEnds[] = [];
      for (const topic of topics) {
        for (const p of await client.fetchTopicOffsets(topic)) {
          ends.push({ topic, partition: p.partition, start: Number(p.low), end: Number(p.high) });
        }
      }
      return ends;
    },
    listTopics: async () => (await connectedAdmin()).listTopics(),
    createTopics: async (topics, partitions) => {
      const client = await connectedAdmin();
      const existing = new Set(await client.listTopics());
      const missing = topics.filter((topic) => !existing.has(topic));
      if (missing.length > 0) {
        await client.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({ topic, numPartitions: partitions })),
        });
      }
      return missing;
    },
    publish: async (messages: readonly OutgoingMessage[]) => {
      if (messages.length === 0) return;
      const byTopic = new Map<string, { key: string; value: Buffer | string | null }[]>();
      for (const { topic, key, value } of messages) {
        const list = byTopic.get(topic) ?? [];
        list.push({ key, value });
        byTopic.set(topic, list);
      }
      await (
        await connectedProducer()
      ).sendBatch({
        acks: -1,
        compression: compressionOf[options.compression ?? 'none'],
        topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
      });
    },
    deleteGroup: async (groupId) => {
      await (await connectedAdmin()).deleteGroups([groupId]).catch(() => undefined);
    },
    close: async () => {
      const clients = await Promise.allSettled([admin, producer].filter((c) => c !== null));
      admin = null;
      producer = null;
      for (const client of clients) {
        if (client.status === 'fulfilled')
          await boundedGoodbye(client.value.disconnect(), goodbyeTimeoutMs, options.logger, 'disconnecting');
      }
    },
  };
}

/** Connects a client once; a failed connection is forgotten so that the next call tries again. */
async function connectOnce<T extends { connect(): Promise<void> }>(
  client: T,
  forget: () => void,
): Promise<T> {
  try {
    await client.connect();
    return client;
  } catch (error) {
    forget();
    throw error;
  }
}

async function startConsumption(
  kafka: Kafka,
  options: KafkajsPortOptions,
  consume: ConsumeOptions,
): Promise<Consumption> {
  const logger = options.logger;
  const consumer = kafka.consumer({
    groupId: consume.groupId,
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: Math.max(500, Math.floor(options.sessionTimeoutMs / 5)),
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
    if (!stopping && error instanceof KafkaJSUnreadableBatch) unreadable.report(error);
  });
  let fail: (error: Error) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  const failWith = (error: unknown): void => {
    if (!stopping) fail(error instanceof Error ? error : new Error(String(error)));
  };

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    for (const [topic, partitions] of Object.entries(payload.memberAssignment)) {
      for (const partition of partitions) {
        // Offset 0 on a partition whose log starts later resolves to the log start (fromBeginning).
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
      autoCommit: true,
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
      await boundedGoodbye(
        consumer.disconnect(),
        goodbyeTimeoutMs,
        logger,
        `leaving group ${consume.groupId}`,
      );
    },
  };
}

/**
 * The partitions at a batch the client cannot read, paused by the patched kafkajs: each is fetched
 * again after a delay that doubles while it keeps failing (a batch read from it starts the delays
 * over), or moved past the batch at once when the consumer's owner says where to.
 */
class UnreadablePartitions {
  private readonly attempts = new Map<string, number>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly consumer: kafkajs.Consumer,
    private readonly consume: ConsumeOptions,
  ) {}

  report(error: InstanceType<typeof KafkaJSUnreadableBatch>): void {
    if (this.stopped) return;
    const { topic, partition } = error;
    const key = `${partition}:${topic}`;
    const attempt = this.attempts.get(key) ?? 0;
    this.attempts.set(key, attempt + 1);
    const retryInMs = backoffDelay(unreadableRetry, attempt);
    const moveTo = this.consume.onUnreadable?.({
      topic,
      partition,
      offset: Number(error.offset),
      lastOffset: error.lastOffset === undefined ? null : Number(error.lastOffset),
      cause: error.cause instanceof Error ? error.cause.message : error.message,
      retryInMs,
    });
    if (moveTo !== undefined) {
      this.attempts.delete(key);
      this.consumer.seek({ topic, partition, offset: String(moveTo) });
      this.consumer.resume([{ topic, partitions: [partition] }]);
      return;
    }
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (!this.stopped) this.consumer.resume([{ topic, partitions: [partition] }]);
    }, retryInMs);
    this.retryTimers.add(timer);
  }

  /** A batch of the partition was read: its next failure waits the shortest delay again. */
  readAgain(topic: string, partition: number): void {
    this.attempts.delete(`${partition}:${topic}`);
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.retryTimers) clearTimeout(timer);
  }
}

/** Routes kafkajs's own log lines into pino. */
function kafkaLogCreator(logger: Logger): logCreator {
  const child = logger.child({ library: 'kafkajs' });
  return () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      switch (level) {
        case logLevel.ERROR:
          child.error(extra, message);
          return;
        case logLevel.WARN:
          child.warn(extra, message);
          return;
        case logLevel.INFO:
          child.info(extra, message);
          return;
        case logLevel.DEBUG:
          child.debug(extra, message);
          return;
        case logLevel.NOTHING:
          return;
      }
    };
}

/**
 * The Kafka port implemented with kafkajs: the adapter files (`kafkajs-*.ts`) alone use the client
 * library, which only `kafkajs-client.ts` imports, so a maintained client can replace them without
 * touching the rest of the service. This one builds the port: the admin and the producer it connects on first use, and
 * the consumers of `kafkajs-consumer.ts`.
 */
import kafkajs, { Kafka, Partitioners, type Admin, type Producer } from './kafkajs-client.js';
import type { Logger } from '../logger.js';
import { limitInflatedBatches, type CodecName } from './codecs.js';
import { boundedGoodbye, goodbyeTimeoutMs } from './goodbye.js';
// registers the codecs with kafkajs, for the batches this port reads and sends
import './kafkajs-codecs.js';
import { startConsumption } from './kafkajs-consumer.js';
import { kafkaLogCreator } from './kafkajs-log.js';
import { createTopicsWithLeaders } from './kafkajs-topics.js';
import type { KafkaPort, OutgoingMessage, PartitionEnds } from './port.js';
import { creationEntries, keepEveryEvent } from './retention.js';

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

// Off the default export: Node's ESM loader does not see it among kafkajs's CommonJS named exports.
const { CompressionTypes, ConfigResourceTypes, ConfigSource } = kafkajs;

/** kafkajs's name for a codec (for code that drives kafkajs directly, such as benchmarks). */
export const compressionOf: Record<CodecName, kafkajs.CompressionTypes> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

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

  let closed = false;
  const deleteGroup = async (groupId: string): Promise<void> => {
    // a consumer's goodbye that ends after the port was closed opens no new connection
    if (closed) return;
    await (await connectedAdmin()).deleteGroups([groupId]).catch(() => undefined);
  };

  return {
    consume: (consume) =>
      startConsumption(kafka, { ...options, deleteGroup: (id) => deleteGroup(id) }, consume),
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
    topicIds: async (topics) => {
      const ids = await (await connectedAdmin()).fetchTopicIds({ topics: [...topics] });
      // none from a broker before Kafka 2.8 (the patched client asks only one that speaks Metadata
      // v10); zeros from a cluster whose topics have no ids yet: unknown either way, and the check
      // then rests on positions alone
      return new Map(
        ids.filter(({ topicId }) => !/^0+$/.test(topicId)).map(({ name, topicId }) => [name, topicId]),
      );
    },
    listTopics: async () => (await connectedAdmin()).listTopics(),
    createTopics: async (topics, creation) => {
      const client = await connectedAdmin();
      const existing = new Set(await client.listTopics());
      const missing = topics.filter((topic) => !existing.has(topic));
      if (missing.length > 0) {
        await createTopicsWithLeaders(
          client,
          missing.map((topic) => ({
            topic,
            numPartitions: creation.partitions,
            ...(creation.replicationFactor === undefined
              ? {}
              : { replicationFactor: creation.replicationFactor }),
            configEntries: creationEntries(creation),
          })),
        );
      }
      return missing;
    },
    topicRetention: async (topics) => {
      const { resources } = await (
        await connectedAdmin()
      ).describeConfigs({
        includeSynonyms: false,
        resources: topics.map((name) => ({
          type: ConfigResourceTypes.TOPIC,
          name,
          configNames: Object.keys(keepEveryEvent),
        })),
      });
      return resources.map((resource) => ({
        topic: resource.resourceName,
        settings: Object.fromEntries(resource.configEntries.map((e) => [e.configName, e.configValue])),
      }));
    },
    retainEveryEvent: async (topics) => {
      const client = await connectedAdmin();
      // AlterConfigs replaces a topic's whole set of its own settings: the ones it has are kept.
      const { resources } = await client.describeConfigs({
        includeSynonyms: false,
        resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
      });
      await client.alterConfigs({
        validateOnly: false,
        resources: resources.map((resource) => {
          const own = resource.configEntries
            .filter((e) => e.configSource === ConfigSource.TOPIC_CONFIG && !e.readOnly)
            .map((e) => [e.configName, e.configValue] as const);
          const entries = new Map<string, string>([...own, ...Object.entries(keepEveryEvent)]);
          return {
            type: ConfigResourceTypes.TOPIC,
            name: resource.resourceName,
            configEntries: [...entries].map(([name, value]) => ({ name, value })),
          };
        }),
      });
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
    deleteGroup,
    close: async () => {
      closed = true;
      const clients = [admin, producer].filter((c) => c !== null);
      admin = null;
      producer = null;
      // A client still connecting (a lag check while the broker is frozen) is bounded like the
      // goodbye: waiting for its connection first would hold the shutdown for kafkajs's retries.
      // It is disconnected whenever its connection settles.
      await Promise.all(
        clients.map((client) =>
          boundedGoodbye(
            client.then((connected) => connected.disconnect()),
            goodbyeTimeoutMs,
            options.logger,
            'disconnecting',
          ),
        ),
      );
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

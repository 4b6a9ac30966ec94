/**
 * The parts of the Kafka port that tests and benchmarks reach through their own kafkajs clients
 * (an independent client, not the service's adapter): publishing and end offsets.
 */
import type { Kafka, Producer } from 'kafkajs';
import type { CodecName } from '../../src/kafka/codecs.js';
import { compressionOf } from '../../src/kafka/kafkajs-adapter.js';
import type { KafkaPort, OutgoingMessage, PartitionEnds } from '../../src/kafka/port.js';

/** Publishes through a connected kafkajs producer, in order per topic, compressed with `codec`. */
export function publishingVia(producer: Producer, codec: CodecName = 'none'): Pick<KafkaPort, 'publish'> {
  return {
    publish: async (messages: readonly OutgoingMessage[]) => {
      const byTopic = new Map<string, { key: string; value: Buffer | string | null }[]>();
      for (const { topic, key, value } of messages) {
        const list = byTopic.get(topic) ?? [];
        list.push({ key, value });
        byTopic.set(topic, list);
      }
      await producer.sendBatch({
        acks: -1,
        compression: compressionOf[codec],
        topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list })),
      });
    },
  };
}

/** End offsets through a kafkajs admin connected for the call. */
export function endOffsetsVia(kafka: Kafka): Pick<KafkaPort, 'endOffsets'> {
  return {
    endOffsets: async (topics) => {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const ends: PartitionEnds[] = [];
        for (const topic of topics) {
          for (const p of await admin.fetchTopicOffsets(topic)) {
            ends.push({ topic, partition: p.partition, start: Number(p.low), end: Number(p.high) });
          }
        }
        return ends;
      } finally {
        await admin.disconnect();
      }
    },
  };
}

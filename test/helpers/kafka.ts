import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { afterAll, inject } from 'vitest';

export function testKafka(clientId = 'test'): Kafka {
  return new Kafka({ clientId, brokers: inject('kafkaBrokers').split(','), logLevel: logLevel.NOTHING });
}

/** A topic name no other test uses. */
export function uniqueTopicName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

/** Creates topics on the shared broker and returns their names. */
export async function createTestTopics(
  admin: Admin,
  prefixes: readonly string[],
  numPartitions = 3,
): Promise<string[]> {
  const topics = prefixes.map(uniqueTopicName);
  await admin.createTopics({
    waitForLeaders: true,
    topics: topics.map((topic) => ({ topic, numPartitions, replicationFactor: 1 })),
  });
  return topics;
}

/** An admin and a producer connected for the file, disconnected after it. */
export async function connectedClients(kafka: Kafka): Promise<{ admin: Admin; producer: Producer }> {
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await Promise.all([admin.connect(), producer.connect()]);
  afterAll(async () => {
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  });
  return { admin, producer };
}

import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import type { DomainEvent } from '../../schemas/events.js';
import type { TopicRole } from '../../schemas/streams.js';
import { createTopicsWithLeaders } from '../../src/kafka/kafkajs-topics.js';
import { EventPublisher } from '../../src/kafka/publisher.js';
import { afterAll, inject } from 'vitest';
import { createContractTopicSet } from '../../tools/harness.js';
import { publishingVia } from './kafkajs-port.js';

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
  await createTopicsWithLeaders(
    admin,
    topics.map((topic) => ({ topic, numPartitions, replicationFactor: 1 })),
  );
  return topics;
}

/** An admin and a producer connected for the file, disconnected after it. */
export async function connectedClients(kafka: Kafka): Promise<{ admin: Admin; producer: Producer }> {
  const admin = kafka.admin();
  // Idempotent: a send retried on a loaded machine (its answer timed out, the write done) is not
  // written twice; a test that wants duplicates sends them twice itself.
  const producer = kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await Promise.all([admin.connect(), producer.connect()]);
  afterAll(async () => {
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  });
  return { admin, producer };
}

/** The topics of the contract (one per declared stream), created fresh for one test file. */
export function createContractTopics(admin: Admin, numPartitions = 3): Promise<Record<TopicRole, string>> {
  return createContractTopicSet(admin, uniqueTopicName('t'), numPartitions);
}

export type Publication = DomainEvent | { role: TopicRole; key: string; raw: Buffer | null };

/** Produces events (JSON, keyed as the contract says) and raw messages in the given order per topic. */
export async function publish(
  producer: Producer,
  topics: Record<TopicRole, string>,
  publications: readonly Publication[],
): Promise<void> {
  const publisher = new EventPublisher(publishingVia(producer), topics);
  for (const item of publications) {
    await ('raw' in item ? publisher.addMessage(item.role, item.key, item.raw) : publisher.add(item));
  }
  await publisher.flush();
}

export { waitUntil } from '../../tools/harness.js';

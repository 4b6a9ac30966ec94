/**
 * The served model's projector reads the keys topic with a consumer of its own: a batch of another
 * topic that holds its consumer (a slow batch, a candidate giving way) never holds back an issue or
 * a revocation. Shown against the one shared consumer, which would hold the key back with it.
 */
import { describe, expect, it } from 'vitest';
import { messageKeyOf, topicRoleOf } from '../../src/consumer/publish.js';
import { runProjection, runProjectionKeysApart } from '../../src/consumer/projector.js';
import type { ConsumeOptions } from '../../src/kafka/port.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { pino } from 'pino';
import type { DomainEvent } from '../../schemas/events.js';
import { apiKeyIssued, orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { MemoryKafka } from '../helpers/memory-kafka.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';

async function keyAppliedWhileOrdersHeld(
  run: typeof runProjection,
): Promise<{ keyApplied: boolean; groups: string[][] }> {
  const kafka = new MemoryKafka(Object.values(testTopics));
  const groups: string[][] = [];
  const consume = kafka.consume.bind(kafka);
  kafka.consume = (options: ConsumeOptions) => {
    groups.push([options.groupId, ...options.topics]);
    return consume(options);
  };
  const publish = (event: DomainEvent): void => {
    const key = messageKeyOf(event);
    kafka.append(testTopics[topicRoleOf(event)], kafka.partitionOf(key), [
      { key, value: JSON.stringify(event) },
    ]);
  };
  const { db, writer } = memoryReadModel();
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  publish(orderCreated({ order_id: 1 }));
  const consumption = await run({
    port: kafka,
    groupId: 'g',
    topics: testTopics,
    writer,
    logger: pino({ level: 'silent' }),
    // every batch is held here until the end: a batch of orders that takes its consumer's time
    afterBatch: () => held,
  });
  try {
    await waitUntil('the order is applied', () => writer.storedOffsets().length > 0, 5000, 10);
    publish(apiKeyIssued('k-1', 7, 'a'.repeat(64)));
    const reader = new ReadModelReader(db);
    const keyApplied = await waitUntil(
      'the key is applied',
      () => reader.orgOfKeyHash('a'.repeat(64)) === 7,
      1000,
      10,
    )
      .then(() => true)
      .catch(() => false);
    return { keyApplied, groups };
  } finally {
    release();
    await consumption.stop();
    db.close();
  }
}

describe('the keys topic apart', () => {
  it('applies a key while a batch of another topic holds its consumer, through a consumer of its own', async () => {
    const apart = await keyAppliedWhileOrdersHeld(runProjectionKeysApart);
    expect(apart.keyApplied).toBe(true);
    expect(apart.groups).toEqual([
      ['g.keys', testTopics.apiKeys],
      ['g', testTopics.orderStatus, testTopics.orders, testTopics.articles],
    ]);
    // one shared consumer holds the key back with the orders
    const shared = await keyAppliedWhileOrdersHeld(runProjection);
    expect(shared.keyApplied).toBe(false);
  });
});

import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { groupOfStart } from '../../src/kafka/port.js';
import { connectedClients, createTestTopics, testKafka, uniqueTopicName } from '../helpers/kafka.js';

/**
 * The patched client never moves a partition away from the position its owner asked for: an offset
 * the log no longer holds (records deleted below it, as retention does) fails the consumer, where
 * kafkajs would reset it to the log start and hand over the events after the gap as if nothing
 * were missing.
 */
describe('an offset the log no longer holds', () => {
  const port = kafkajsPort({
    brokers: inject('kafkaBrokers').split(','),
    clientId: 'out-of-range-test',
    sessionTimeoutMs: 6000,
    logger: pino({ level: 'silent' }),
  });
  afterAll(() => port.close());

  it('fails the consumer instead of reading on from the new log start', async () => {
    const { admin, producer } = await connectedClients(testKafka('out-of-range-test'));
    const [topic = ''] = await createTestTopics(admin, ['out-of-range'], 1);
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `v${i}` })) });
    await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] });

    const delivered: string[] = [];
    const consumption = await port.consume({
      groupId: groupOfStart(uniqueTopicName('out-of-range'), Date.now(), 1),
      topics: [topic],
      startAt: () => 2,
      onBatch: (batch) => {
        delivered.push(...batch.messages.map((m) => m.offset));
      },
    });
    const failed = await Promise.race([
      consumption.failed,
      new Promise<null>((resolve) => setTimeout(() => resolve(null), 30_000)),
    ]);
    await consumption.stop();
    expect(failed?.message).toMatch(/out of range|not within the range/i);
    expect(delivered).toEqual([]);
  });
});

import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { groupOfStart, type Consumption } from '../../src/kafka/port.js';
import {
  connectedClients,
  createTestTopics,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';

/**
 * Every consumer start joins a group of its own (`groupOfStart`) and keeps its positions in SQLite:
 * nothing of a start may stay on the broker, neither committed offsets (kept 7 days by default)
 * nor the group itself once the consumer has stopped.
 */
describe('the consumer groups of consumer starts', () => {
  const kafka = testKafka('groups-test');
  const port = kafkajsPort({
    brokers: inject('kafkaBrokers').split(','),
    clientId: 'groups-test',
    sessionTimeoutMs: 6000,
    logger: pino({ level: 'silent' }),
  });
  afterAll(() => port.close());

  it('commit no offsets while they run, and leave no group once stopped, restart after restart', async () => {
    const { admin, producer } = await connectedClients(kafka);
    const [topic = ''] = await createTestTopics(admin, ['groups'], 2);
    const messages = Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: `v${i}` }));
    await producer.send({ topic, messages });
    const prefix = uniqueTopicName('starts');
    /** The offsets the broker keeps for `groupId`, by partition (-1: none). */
    const committed = async (groupId: string): Promise<string[]> =>
      (await admin.fetchOffsets({ groupId, topics: [topic] })).flatMap((t) =>
        t.partitions.map((p) => `${p.partition}:${p.offset}`),
      );
    const groupsLeft = async (): Promise<string[]> =>
      (await admin.listGroups()).groups.map((g) => g.groupId).filter((id) => id.startsWith(prefix));

    // the first start, then two restarts, as the supervisor makes them: stop, then a new group
    for (const start of [1, 2, 3]) {
      const groupId = groupOfStart(prefix, Date.now(), start);
      let received = 0;
      let fetches = 0;
      const consumption: Consumption = await port.consume({
        groupId,
        topics: [topic],
        startAt: () => undefined,
        onBatch: (batch) => {
          received += batch.messages.length;
        },
        onFetched: () => {
          fetches += 1;
        },
        maxWaitMs: 100,
      });
      await waitUntil('every message read', () => received === messages.length, 30_000);
      // fetches after the last batch: kafkajs would have committed what it resolved by now
      const after = fetches;
      await waitUntil('three more fetches', () => fetches >= after + 3, 30_000);
      expect(await committed(groupId)).toEqual(['0:-1', '1:-1']);
      await consumption.stop();
      expect(await committed(groupId)).toEqual(['0:-1', '1:-1']);
      expect(await groupsLeft()).toEqual([]);
    }
  });
});

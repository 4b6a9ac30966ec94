import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/consumer/projector.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { orderCreated, statusChanged } from '../helpers/events.js';
import { dumpModel, memoryReadModel, recountedCounters, storedCounters } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';

describe('projector through the real broker', () => {
  const dir = tempDir('projector-int');

  it('converges to the canonical model from shuffled topics with duplicates, and dead-letters each garbage message once', async () => {
    const kafka = testKafka();
    const { admin, producer } = await connectedClients(kafka);
    const topics = await createContractTopics(admin);
    const { history, publications, garbage } = seededLog(20261121, {
      orgs: 4,
      orders: 40,
      events: 600,
      garbage: 35,
    });
    await publish(producer, topics, publications);

    const db = openReadModel(join(dir, 'model.sqlite'));
    const writer = new ReadModelWriter(db, roleOfTopic(topics));
    const port = kafkajsPort({
      brokers: inject('kafkaBrokers').split(','),
      clientId: 'projector-test',
      sessionTimeoutMs: 6000,
      logger: pino({ level: 'silent' }),
    });
    const consumption = await runProjection({
      port,
      groupId: uniqueTopicName('projector'),
      topics,
      writer,
      logger: pino({ level: 'silent' }),
    });
    try {
      await waitUntil('the model has caught up', async () =>
        (await port.endOffsets(Object.values(topics))).every(
          (p) => (writer.storedOffset(p.topic, p.partition) ?? p.start) >= p.end,
        ),
      );
    } finally {
      await consumption.stop();
      await port.close();
    }

    const expected = memoryReadModel();
    expected.apply(...history);
    expect(dumpModel(db)).toEqual(dumpModel(expected.db));
    expect(storedCounters(db)).toEqual(recountedCounters(db));
    const letters = db.prepare('SELECT raw_value, reason FROM dead_letters').all() as {
      raw_value: Buffer | null;
      reason: string;
    }[];
    const key = (raw: Buffer | null, reason: string): string => `${raw?.toString('hex') ?? 'null'}/${reason}`;
    expect(letters.map((l) => key(l.raw_value, l.reason)).sort()).toEqual(
      garbage.map((g) => key(g.raw, g.reason)).sort(),
    );
    db.close();
  });

  it('applies the later of two facts 300 µs apart although it is published first with the smaller event id', async () => {
    const kafka = testKafka();
    const { admin, producer } = await connectedClients(kafka);
    const topics = await createContractTopics(admin);
    const second = '2026-11-21T10:15:00';
    const pairs = Array.from({ length: 20 }, (_, i) => i + 1).flatMap((id) => [
      orderCreated({ order_id: id, status: 'publishing' }, { occurred_at: `${second}Z` }),
      statusChanged(id, 'finished', { event_id: `a-${id}`, occurred_at: `${second}.000400Z` }),
      statusChanged(id, 'publishing', { event_id: `b-${id}`, occurred_at: `${second}.000100Z` }),
    ]);
    await publish(producer, topics, pairs);

    const db = openReadModel(join(dir, 'precision.sqlite'));
    const writer = new ReadModelWriter(db, roleOfTopic(topics));
    const port = kafkajsPort({
      brokers: inject('kafkaBrokers').split(','),
      clientId: 'precision-test',
      sessionTimeoutMs: 6000,
      logger: pino({ level: 'silent' }),
    });
    const consumption = await runProjection({
      port,
      groupId: uniqueTopicName('precision'),
      topics,
      writer,
      logger: pino({ level: 'silent' }),
    });
    try {
      await waitUntil('the model has caught up', async () =>
        (await port.endOffsets(Object.values(topics))).every(
          (p) => (writer.storedOffset(p.topic, p.partition) ?? p.start) >= p.end,
        ),
      );
    } finally {
      await consumption.stop();
      await port.close();
    }
    const statuses = db.prepare('SELECT DISTINCT status, listed_status FROM orders').all();
    expect(statuses).toEqual([{ status: 'finished', listed_status: 'finished' }]);
    db.close();
  });
});

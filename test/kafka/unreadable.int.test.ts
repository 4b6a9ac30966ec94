/**
 * A record batch the Kafka client cannot read stops its partition only. Here the client lacks the
 * zstd codec (unregistered in this test process, as it is in kafkajs before this service registers
 * it) while kcat writes zstd to one partition.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/projector/projector.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import type { UnreadableBatch } from '../../src/kafka/port.js';
import { openOneFileModel } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { issueKeyOf } from '../helpers/api.js';
import { orderCreated, statusChanged, at } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { tempDir } from '../helpers/temp.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;

describe('a record batch the client cannot read', () => {
  const dir = tempDir('unreadable');
  const zstd = CompressionCodecs[CompressionTypes.ZSTD];
  afterAll(() => {
    CompressionCodecs[CompressionTypes.ZSTD] = zstd;
  });

  it('pauses only its partition, names topic, partition, offset and cause, retries with backoff, and reads it once it can', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const orders = Array.from({ length: 30 }, (_, i) =>
      orderCreated({ order_id: i + 1, status: 'publishing' }, { occurred_at: at(i) }),
    );
    await publish(producer, topics, [issueKeyOf(1), ...orders]);
    // kcat writes status changes, zstd-compressed, to partition 0 of the status topic only.
    const lines = orders.map(
      (o) =>
        `${o.data.order_id}\t${JSON.stringify(statusChanged(o.data.order_id, 'finished', { occurred_at: at(100) }))}`,
    );
    const kcat = spawnSync(
      'kcat',
      ['-P', '-b', inject('kafkaBrokers'), '-t', topics.orderStatus, '-p', '0', '-z', 'zstd', '-K', '\t'],
      {
        input: `${lines.join('\n')}\n`,
        encoding: 'utf8',
      },
    );
    expect(kcat.status, kcat.stderr).toBe(0);

    const port = kafkajsPort({
      brokers: inject('kafkaBrokers').split(','),
      clientId: 'unreadable-test',
      sessionTimeoutMs: 6000,
      logger: pino({ level: 'silent' }),
    });
    // After the adapter registered every codec: zstd as kafkajs has it by itself.
    CompressionCodecs[CompressionTypes.ZSTD] = () => {
      throw new Error('ZSTD compression not implemented');
    };
    // every topic into one file: the orders model's tables and the keys store's
    const db = openOneFileModel(join(dir, 'model.sqlite'));
    const writer = new ReadModelWriter(db, roleOfTopic(topics));
    const reports: (UnreadableBatch & { at: number })[] = [];
    const consumption = await runProjection({
      port,
      groupId: uniqueTopicName('unreadable'),
      topics,
      writer,
      logger: pino({ level: 'silent' }),
      onUnreadable: (batch) => reports.push({ ...batch, at: Date.now() }),
    });
    try {
      const ends = await port.endOffsets(Object.values(topics));
      const readable = ends.filter((p) => !(p.topic === topics.orderStatus && p.partition === 0));
      await waitUntil(
        'every other partition is applied',
        () => readable.every((p) => (writer.storedOffset(p.topic, p.partition) ?? p.start) >= p.end),
        60_000,
      );
      await waitUntil('retried twice', () => reports.length >= 3, 30_000);
      expect(reports[0]).toMatchObject({
        topic: topics.orderStatus,
        partition: 0,
        offset: 0,
        retryInMs: 1000,
      });
      expect(reports[0]!.cause).toMatch(/ZSTD/i);
      expect(reports.slice(0, 3).map((r) => r.retryInMs)).toEqual([1000, 2000, 4000]);
      expect(reports[1]!.at - reports[0]!.at).toBeGreaterThanOrEqual(900);
      expect(writer.storedOffset(topics.orderStatus, 0) ?? 0).toBe(0);

      CompressionCodecs[CompressionTypes.ZSTD] = zstd;
      const statusEnd = ends.find((p) => p.topic === topics.orderStatus && p.partition === 0)!.end;
      await waitUntil(
        'the partition is read once the codec is there',
        () => (writer.storedOffset(topics.orderStatus, 0) ?? 0) >= statusEnd,
        60_000,
      );
      expect(db.prepare(`SELECT count(*) AS n FROM orders WHERE status = 'finished'`).get()).toEqual({
        n: 30,
      });
    } finally {
      await consumption.stop();
      await port.close();
      db.close();
    }
  });
});

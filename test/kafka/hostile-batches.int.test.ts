/**
 * Hostile batches from a producer this project did not write (kcat): a few KB of zstd that inflate
 * far beyond the batch bound, a batch of 200 000 small records, and a message beyond the message
 * bound. The projector stays up, the partition holding an over-bound batch waits (reported, tried
 * again with backoff), and every other partition goes on: a revocation published after them is applied.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/projector/projector.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import type { UnreadableBatch } from '../../src/kafka/port.js';
import { openOneFileModel } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { tempDir } from '../helpers/temp.js';
import { kcatProduce } from '../../tools/kcat.js';

const batchBound = 2 * 1024 * 1024;
const messageBound = 64 * 1024;

/** One kcat batch to one partition: `lines` of `key<TAB>value`, zstd. */
function kcat(topic: string, partition: number, lines: string[], settings: string[] = []): void {
  kcatProduce({ brokers: inject('kafkaBrokers'), topic, partition, lines, settings });
}

describe('hostile batches', () => {
  const dir = tempDir('hostile');

  it('pause only their partition, dead-letter an oversized message with its size, SHA-256 and a preview, and never hold up the keys', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [issueKeyOf(1), issueKeyOf(2)]);

    // Partition 0 of the orders topic: one valid event padded with spaces to 8 MB, zstd (a few KB).
    const padded = JSON.stringify(orderCreated({ order_id: 1 }, { occurred_at: at(1) })).replace(
      /}$/,
      `${' '.repeat(8 * 1024 * 1024)}}`,
    );
    kcat(topics.orders, 0, [`1\t${padded}`]);
    // Partition 1 of the orders topic: 200 000 small records in one batch. kcat flushes at the end
    // of its input, so a long linger only keeps a loaded machine from cutting the batch in two
    // (with 500 ms, one CI run got a batch ending at 148 311).
    const small = Array.from({ length: 200_000 }, (_, i) => `${i}\t{"n":${i}}`);
    kcat(topics.orders, 1, small, [
      'batch.num.messages=200000',
      'queue.buffering.max.messages=1000000',
      'batch.size=100000000',
      'linger.ms=60000',
    ]);
    // Partition 2: a valid order beyond the message bound, then an ordinary one.
    const big = orderCreated({ order_id: 7, press_release_title: 'x'.repeat(1000) }, { occurred_at: at(2) });
    const oversized = JSON.stringify(big).replace(/}$/, `${' '.repeat(messageBound)}}`);
    kcat(topics.orders, 2, [
      `7\t${oversized}`,
      `8\t${JSON.stringify(orderCreated({ order_id: 8 }, { occurred_at: at(3) }))}`,
    ]);

    const port = kafkajsPort({
      brokers: inject('kafkaBrokers').split(','),
      clientId: 'hostile-test',
      sessionTimeoutMs: 6000,
      logger: pino({ level: 'silent' }),
      maxInflatedBatchBytes: batchBound,
    });
    // every topic into one file: the orders model's tables and the keys store's
    const db = openOneFileModel(join(dir, 'model.sqlite'));
    const writer = new ReadModelWriter(db, roleOfTopic(topics));
    const reports: UnreadableBatch[] = [];
    const consumption = await runProjection({
      port,
      groupId: uniqueTopicName('hostile'),
      topics,
      writer,
      logger: pino({ level: 'silent' }),
      maxMessageBytes: messageBound,
      onUnreadable: (batch) => reports.push(batch),
    });
    try {
      await waitUntil('the oversized message is dead-lettered and the order after it applied', () => {
        const row = db.prepare('SELECT count(*) AS n FROM orders WHERE order_id = 8').get() as { n: number };
        return row.n === 1;
      });
      const letter = db.prepare(`SELECT raw_value, reason, detail FROM dead_letters`).get() as {
        raw_value: Buffer;
        reason: string;
        detail: string;
      };
      expect(letter.reason).toBe('too_large');
      expect(letter.raw_value.length).toBe(1024);
      expect(letter.detail).toContain(
        `[value: ${oversized.length} bytes, sha256 ${sha256Hex(oversized)}, the first 1024 stored]`,
      );

      await waitUntil('both over-bound batches are reported', () =>
        [0, 1].every((p) => reports.some((r) => r.topic === topics.orders && r.partition === p)),
      );
      for (const report of reports) expect(report.cause).toMatch(/inflates beyond BATCH_MAX_INFLATED_BYTES/);
      // Where each batch ends, read from its header: what skip-batch needs to move past it.
      expect(reports.find((r) => r.partition === 1)?.lastOffset).toBe(199_999);
      expect(reports.find((r) => r.partition === 0)?.lastOffset).toBe(0);

      // The keys go on: a revocation published now is applied.
      await publish(producer, topics, [apiKeyRevoked('test-api-key-of-org-2', { occurred_at: at(50) })]);
      await waitUntil(
        'the revocation is applied',
        () => {
          const row = db
            .prepare('SELECT count(*) AS n FROM api_keys WHERE key_sha256 = ? AND revoked = 0')
            .get(sha256Hex(keyOf(2))) as { n: number };
          return row.n === 0;
        },
        10_000,
      );
      expect(writer.storedOffset(topics.orders, 0) ?? 0).toBe(0);
      expect(writer.storedOffset(topics.orders, 1) ?? 0).toBe(0);
    } finally {
      await consumption.stop();
      await port.close();
      db.close();
    }
  });
});

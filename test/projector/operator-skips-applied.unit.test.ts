/**
 * Operators' skips as a build meets them (`runProjection` with a writer of its own): a recorded
 * skip moves the partition past the one unreadable batch it names, and past nothing else.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runProjection, type AppliedBatchFacts } from '../../src/projector/projector.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { MemoryKafka } from '../helpers/memory-kafka.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

describe('operator skips met by a build', () => {
  const dir = tempDir('skips-applied');

  it('moves past the batch a skip names only, whatever order the skips were recorded in', async () => {
    const kafka = new MemoryKafka(Object.values(testTopics), 1);
    kafka.append(
      testTopics.orders,
      0,
      Array.from({ length: 600 }, (_, i) => ({
        key: String(i + 1),
        value: JSON.stringify(orderCreated({ order_id: i + 1 })),
      })),
    );
    kafka.makeUnreadableBatch(testTopics.orders, 0, 100, 110, 'a codec this client lacks');
    kafka.makeUnreadableBatch(testTopics.orders, 0, 500, 511, 'a codec this client lacks');
    // A new replica: the operator records the skips newest first, as `dead-letters list` prints them.
    const files = new ModelFiles(join(dir, 'data'));
    const skip = { topic: testTopics.orders, partition: 0, reason: 'padded', by: 'ops@h', at: 'now' };
    files.recordOperatorSkip({ ...skip, firstOffset: 500, lastOffset: 511 });
    files.recordOperatorSkip({ ...skip, firstOffset: 100, lastOffset: 110 });

    const { db, writer } = memoryReadModel();
    const consumption = await runProjection({
      port: kafka,
      groupId: 'g',
      topics: testTopics,
      writer,
      logger: pino({ level: 'silent' }),
      operatorSkips: () => files.operatorSkips(),
    });
    try {
      await waitUntil(
        'the partition is read to its end',
        () => writer.storedOffset(testTopics.orders, 0) === 600,
      );
    } finally {
      await consumption.stop();
    }
    const orders = db.prepare('SELECT order_id FROM orders ORDER BY order_id').pluck().all() as number[];
    const expected = Array.from({ length: 600 }, (_, i) => i + 1).filter(
      (id) => !(id >= 101 && id <= 111) && !(id >= 501 && id <= 512),
    );
    expect(orders.length).toBe(expected.length);
    expect(orders).toEqual(expected);
  });

  it('waits at a batch no skip names exactly, and moves past it once one is recorded, reporting it as a batch', async () => {
    const kafka = new MemoryKafka(Object.values(testTopics), 1);
    kafka.append(
      testTopics.orders,
      0,
      Array.from({ length: 30 }, (_, i) => ({
        key: String(i + 1),
        value: JSON.stringify(orderCreated({ order_id: i + 1 })),
      })),
    );
    kafka.makeUnreadableBatch(testTopics.orders, 0, 10, 19, 'a codec this client lacks');
    const files = new ModelFiles(join(dir, 'waits'));
    const skip = { topic: testTopics.orders, partition: 0, reason: 'padded', by: 'ops@h', at: 'now' };
    // other batches of the partition: neither applies to 10–19
    files.recordOperatorSkip({ ...skip, firstOffset: 10, lastOffset: 18 });
    files.recordOperatorSkip({ ...skip, firstOffset: 11, lastOffset: 19 });
    const { db, writer } = memoryReadModel();
    const unreadable: unknown[] = [];
    const batches: AppliedBatchFacts[] = [];
    const consumption = await runProjection({
      port: kafka,
      groupId: 'g',
      topics: testTopics,
      writer,
      logger: pino({ level: 'silent' }),
      operatorSkips: () => files.operatorSkips(),
      onUnreadable: (batch) => unreadable.push(batch),
      onBatch: (batch) => batches.push(batch),
    });
    try {
      await waitUntil('the batch is reported twice', () => unreadable.length >= 2);
      expect(unreadable[0]).toEqual({
        topic: testTopics.orders,
        partition: 0,
        offset: 10,
        lastOffset: 19,
        cause: 'a codec this client lacks',
        retryInMs: 50,
      });
      expect(writer.storedOffset(testTopics.orders, 0)).toBe(10);
      // recorded while the projector waits: it moves on at its next attempt
      files.recordOperatorSkip({ ...skip, firstOffset: 10, lastOffset: 19 });
      await waitUntil(
        'the partition is read to its end',
        () => writer.storedOffset(testTopics.orders, 0) === 30,
      );
    } finally {
      await consumption.stop();
    }
    const skipped = batches.filter((b) => b.messages === 0);
    expect(skipped).toEqual([
      {
        topic: testTopics.orders,
        partition: 0,
        messages: 0,
        startedAt: expect.any(Number) as unknown,
        endedAt: expect.any(Number) as unknown,
        outcome: {
          applied: 0,
          unchanged: 0,
          deadLettered: 1,
          skipped: 0,
          appliedByType: {},
          deadLettersByReason: { skipped_by_operator: 1 },
          nextOffset: 20,
          durationMs: 0,
        },
      },
    ]);
    expect(db.prepare('SELECT "offset", detail FROM dead_letters').all()).toEqual([
      { offset: 10, detail: 'offsets 10–19 skipped by ops@h: padded' },
    ]);
    expect(db.prepare('SELECT count(*) FROM orders').pluck().get()).toBe(20);
  });

  it('counts an unreadable record of skips as none: the partition waits', async () => {
    const kafka = new MemoryKafka(Object.values(testTopics), 1);
    kafka.append(testTopics.orders, 0, [{ key: '1', value: JSON.stringify(orderCreated({ order_id: 1 })) }]);
    kafka.makeUnreadableBatch(testTopics.orders, 0, 0, 0, 'corrupt');
    const { writer } = memoryReadModel();
    const unreadable: unknown[] = [];
    const consumption = await runProjection({
      port: kafka,
      groupId: 'g',
      topics: testTopics,
      writer,
      logger: pino({ level: 'silent' }),
      operatorSkips: () => {
        throw new Error('the record cannot be read');
      },
      onUnreadable: (batch) => unreadable.push(batch),
    });
    try {
      await waitUntil('the batch is reported', () => unreadable.length >= 1);
    } finally {
      await consumption.stop();
    }
    expect(writer.storedOffset(testTopics.orders, 0)).toBeUndefined();
  });
});

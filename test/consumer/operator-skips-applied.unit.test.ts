/**
 * Operators' skips as a build meets them (`runProjection` with a writer of its own): a recorded
 * skip moves the partition past the one unreadable batch it names, and past nothing else.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runProjection } from '../../src/consumer/projector.js';
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
});

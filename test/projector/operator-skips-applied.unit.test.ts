/**
 * Operators' skips as a build meets them (`runProjection` with a writer of its own): a recorded
 * skip moves the partition past the one unreadable batch it names, and past nothing else.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  runProjection,
  type AppliedBatchFacts,
  type ProjectionOptions,
} from '../../src/projector/projector.js';
import type { ConsumeOptions, Consumption, UnreadableBatch } from '../../src/kafka/port.js';
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
          alreadyApplied: 0,
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

/**
 * The projector's answer to an unreadable batch, met directly: the consumer's `onUnreadable` as the
 * projection gives it to a port that only keeps it.
 */
describe('an unreadable batch met by the projector', () => {
  interface Line {
    level: number;
    msg: string;
    [field: string]: unknown;
  }

  /** `listens` false: no `onUnreadable` of the projection's own. */
  async function projection(
    options: Partial<ProjectionOptions> = {},
    listens = true,
  ): Promise<{
    onUnreadable: NonNullable<ConsumeOptions['onUnreadable']>;
    model: ReturnType<typeof memoryReadModel>;
    lines: Line[];
    reported: UnreadableBatch[];
    batches: AppliedBatchFacts[];
  }> {
    let consume: ConsumeOptions | undefined;
    const model = memoryReadModel();
    const lines: Line[] = [];
    const reported: UnreadableBatch[] = [];
    const batches: AppliedBatchFacts[] = [];
    await runProjection({
      port: {
        consume: (o) => {
          consume = o;
          return Promise.resolve({} as Consumption);
        },
        endOffsets: () => Promise.resolve([]),
        topicIds: () => Promise.resolve(new Map()),
      },
      groupId: 'g',
      topics: testTopics,
      writer: model.writer,
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as Line) }),
      ...(listens ? { onUnreadable: (batch: UnreadableBatch) => reported.push(batch) } : {}),
      onBatch: (batch) => batches.push(batch),
      ...options,
    });
    return { onUnreadable: consume!.onUnreadable!, model, lines, reported, batches };
  }

  const batch: UnreadableBatch = {
    topic: testTopics.orders,
    partition: 0,
    offset: 5,
    lastOffset: 9,
    cause: 'a codec this client lacks',
    retryInMs: 100,
  };
  const skip = {
    topic: testTopics.orders,
    partition: 0,
    firstOffset: 5,
    lastOffset: 9,
    reason: 'padded',
    by: 'ops@h',
    at: 'now',
  };
  const fields = (line: Line | undefined): Record<string, unknown> => {
    const { level, msg, ...rest } = line ?? { level: 0, msg: '' };
    delete rest['time'];
    delete rest['pid'];
    delete rest['hostname'];
    return { level, msg, ...rest };
  };

  /** A model that has read offsets 0…`next`-1 of the orders topic's partition 0. */
  function readTo(model: ReturnType<typeof memoryReadModel>, next: number): void {
    model.apply(...Array.from({ length: next }, (_, i) => orderCreated({ order_id: i + 1 })));
    expect(model.writer.storedOffset(testTopics.orders, 0)).toBe(next);
  }

  it('moves past the batch a recorded skip names, as a batch of one dead letter, saying who skipped it and why', async () => {
    const p = await projection({ operatorSkips: () => [skip] });
    readTo(p.model, 5);
    const before = performance.timeOrigin + performance.now();
    expect(p.onUnreadable(batch)).toBe(10);
    const after = performance.timeOrigin + performance.now();
    expect(p.model.writer.storedOffset(testTopics.orders, 0)).toBe(10);
    expect(p.reported).toEqual([]);
    expect(p.batches).toHaveLength(1);
    const [applied] = p.batches;
    expect(applied!.startedAt).toBe(applied!.endedAt);
    expect(applied!.startedAt).toBeGreaterThanOrEqual(before);
    expect(applied!.startedAt).toBeLessThanOrEqual(after);
    expect(p.lines.map(fields)).toEqual([
      {
        level: 40,
        msg: 'moving past a record batch an operator skipped',
        ...batch,
        next: 10,
        by: 'ops@h',
        reason: 'padded',
      },
    ]);
  });

  it('does not move a model that is not at the batch a recorded skip names, and says so', async () => {
    const p = await projection({ operatorSkips: () => [skip] });
    readTo(p.model, 3);
    expect(p.onUnreadable(batch)).toBeUndefined();
    expect(p.model.writer.storedOffset(testTopics.orders, 0)).toBe(3);
    expect(p.model.db.prepare('SELECT count(*) FROM dead_letters').pluck().get()).toBe(0);
    expect(p.batches).toEqual([]);
    expect(p.reported).toEqual([batch]);
    expect(p.lines.map(fields)).toEqual([
      {
        level: 50,
        msg: 'a recorded skip names this batch, but the model is not at it; it is not moved',
        ...batch,
        position: 3,
      },
      {
        level: 50,
        msg: 'a record batch cannot be read; the partition waits, every other one goes on',
        ...batch,
      },
    ]);
  });

  it('leaves the partition waiting at a batch no skip names, and reports it', async () => {
    const p = await projection({ operatorSkips: () => [{ ...skip, lastOffset: 8 }] });
    readTo(p.model, 5);
    expect(p.onUnreadable(batch)).toBeUndefined();
    expect(p.model.writer.storedOffset(testTopics.orders, 0)).toBe(5);
    expect(p.reported).toEqual([batch]);
    expect(p.lines.map(fields)).toEqual([
      {
        level: 50,
        msg: 'a record batch cannot be read; the partition waits, every other one goes on',
        ...batch,
      },
    ]);
  });

  it('leaves it waiting where nobody listens for unreadable batches', async () => {
    const p = await projection({ operatorSkips: () => [{ ...skip, lastOffset: 8 }] }, false);
    expect(p.onUnreadable(batch)).toBeUndefined();
    expect(p.reported).toEqual([]);
  });

  it('leaves it waiting where no skips are given, or their record cannot be read, saying so', async () => {
    const none = await projection();
    expect(none.onUnreadable(batch)).toBeUndefined();
    expect(none.reported).toEqual([batch]);
    expect(none.lines.map(fields)).toEqual([
      {
        level: 50,
        msg: 'a record batch cannot be read; the partition waits, every other one goes on',
        ...batch,
      },
    ]);
    const unreadable = await projection({
      operatorSkips: () => {
        throw new Error('the record cannot be read');
      },
    });
    expect(unreadable.onUnreadable(batch)).toBeUndefined();
    expect(unreadable.lines.map(fields)).toEqual([
      {
        level: 50,
        msg: 'the batches operators skipped cannot be read',
        err: expect.objectContaining({ message: 'the record cannot be read' }) as unknown,
      },
      {
        level: 50,
        msg: 'a record batch cannot be read; the partition waits, every other one goes on',
        ...batch,
      },
    ]);
  });
});

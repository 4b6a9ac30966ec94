/**
 * An operator's skip (`skip-batch`) names one record batch: the batch a recorded skip applies to,
 * where a model stands against it, what the operator may ask for, the dead letter and position a
 * writer records when its model is at the batch, and the skips read back from a model's dead
 * letters (what a snapshot carries to a new replica).
 */
import { describe, expect, it } from 'vitest';
import {
  maxReasonLength,
  operatorSkipsIn,
  placeOf,
  skipDetail,
  skipOf,
  skipProblem,
  type OperatorSkip,
} from '../../src/read-model/operator-skips.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';

const skip = (over: Partial<OperatorSkip> = {}): OperatorSkip => ({
  topic: testTopics.orders,
  partition: 0,
  firstOffset: 4,
  lastOffset: 9,
  reason: 'a producer bug: padded batch',
  by: 'ops@host-1',
  at: '2026-01-01T00:00:00.000Z',
  ...over,
});
const met = { topic: testTopics.orders, partition: 0, offset: 4, lastOffset: 9 };

describe('the batch a recorded skip applies to', () => {
  it('is the one with the same topic, partition, first and last offset, and no other', () => {
    expect(skipOf([skip()], met)).toEqual(skip());
    expect(skipOf([skip()], { ...met, topic: testTopics.articles })).toBeUndefined();
    expect(skipOf([skip()], { ...met, partition: 1 })).toBeUndefined();
    expect(skipOf([skip()], { ...met, offset: 3 })).toBeUndefined();
    expect(skipOf([skip()], { ...met, offset: 5 })).toBeUndefined();
    expect(skipOf([skip()], { ...met, lastOffset: 8 })).toBeUndefined();
    expect(skipOf([skip()], { ...met, lastOffset: 10 })).toBeUndefined();
    // a batch inside the skipped offsets, or one that ends exactly at its first offset
    expect(skipOf([skip()], { ...met, offset: 5, lastOffset: 8 })).toBeUndefined();
    expect(skipOf([skip()], { ...met, offset: 0, lastOffset: 4 })).toBeUndefined();
    expect(skipOf([], met)).toBeUndefined();
  });

  it('is found among others whatever order they were recorded in', () => {
    const later = skip({ firstOffset: 500, lastOffset: 511 });
    const earlier = skip({ firstOffset: 100, lastOffset: 110 });
    expect(skipOf([later, earlier], { ...met, offset: 100, lastOffset: 110 })).toBe(earlier);
    expect(skipOf([later, earlier], { ...met, offset: 500, lastOffset: 511 })).toBe(later);
    expect(skipOf([later, earlier], { ...met, offset: 111, lastOffset: 120 })).toBeUndefined();
  });

  it('is never a batch whose header could not be read: where it ends is unknown', () => {
    expect(skipOf([skip()], { ...met, lastOffset: null })).toBeUndefined();
  });
});

describe('where a model stands against a skipped batch (4–9)', () => {
  it('by its stored position on the partition', () => {
    expect(placeOf(undefined, skip())).toBe('not read yet');
    expect(placeOf(0, skip())).toBe('before');
    expect(placeOf(3, skip())).toBe('before');
    expect(placeOf(4, skip())).toBe('at');
    expect(placeOf(5, skip())).toBe('inside');
    expect(placeOf(9, skip())).toBe('inside');
    expect(placeOf(10, skip())).toBe('past');
  });
});

describe('what an operator may record', () => {
  const topics = Object.values(testTopics);
  it('a configured topic, a first offset not after the last, and a reason that fits a dead letter', () => {
    expect(skipProblem(skip(), topics)).toBeNull();
    expect(skipProblem(skip({ firstOffset: 9 }), topics)).toBeNull();
    expect(skipProblem(skip({ topic: 'elsewhere' }), topics)).toBe(
      `elsewhere is not one of the configured topics (${topics.join(', ')}).`,
    );
    expect(skipProblem(skip({ firstOffset: 10 }), topics)).toBe(
      "--through 9 is before --from 10: give the batch's first offset (where the partition stopped) and its last offset, as /readyz and the log name them.",
    );
    expect(skipProblem(skip({ reason: ' \n ' }), topics)).toBe('--reason is required: say why');
    expect(skipProblem(skip({ reason: 'r'.repeat(maxReasonLength) }), topics)).toBeNull();
    expect(skipProblem(skip({ reason: 'r'.repeat(maxReasonLength + 1) }), topics)).toBe(
      `--reason is ${maxReasonLength + 1} characters long; at most ${maxReasonLength}, so that the dead letter keeps all of it.`,
    );
    expect(maxReasonLength).toBe(300);
  });
});

describe('a skip applied by a writer', () => {
  it('records one dead letter at the batch and the position after it, when the model is at the batch', () => {
    const { db, writer } = memoryReadModel();
    writer.applyBatch(testTopics.orders, 0, [], 4);
    expect(writer.skipByOperator(skip())).toBe(10);
    expect(writer.storedOffset(testTopics.orders, 0)).toBe(10);
    expect(db.prepare('SELECT next_offset FROM consumer_offsets').pluck().all()).toEqual([10]);
    expect(db.prepare('SELECT topic, partition, "offset", reason, detail FROM dead_letters').all()).toEqual([
      {
        topic: testTopics.orders,
        partition: 0,
        offset: 4,
        reason: 'skipped_by_operator',
        detail: 'offsets 4–9 skipped by ops@host-1: a producer bug: padded batch',
      },
    ]);
    // met again (a second report of the same batch): the model is past it, nothing more is written
    expect(writer.skipByOperator(skip())).toBeNull();
    expect(db.prepare('SELECT count(*) FROM dead_letters').pluck().get()).toBe(1);
  });

  it('moves a partition it has never read (its projector starts at the log start, where it met the batch)', () => {
    const { writer } = memoryReadModel();
    expect(writer.skipByOperator(skip({ firstOffset: 0, lastOffset: 0 }))).toBe(1);
    expect(writer.storedOffset(testTopics.orders, 0)).toBe(1);
  });

  it('moves no model that is elsewhere on the partition, and writes nothing', () => {
    for (const position of [3, 5, 9, 10]) {
      const { db, writer } = memoryReadModel();
      writer.applyBatch(testTopics.orders, 0, [], position);
      expect(writer.skipByOperator(skip()), String(position)).toBeNull();
      expect(writer.storedOffset(testTopics.orders, 0)).toBe(position);
      expect(db.prepare('SELECT count(*) FROM dead_letters').pluck().get()).toBe(0);
    }
  });

  it('keeps the other partitions where they are', () => {
    const { writer } = memoryReadModel();
    writer.applyBatch(testTopics.orders, 1, [], 7);
    expect(writer.skipByOperator(skip({ firstOffset: 0, lastOffset: 2 }))).toBe(3);
    expect(writer.storedOffset(testTopics.orders, 1)).toBe(7);
  });
});

describe('the skips a model gives back from its dead letters', () => {
  it('reads every skipped_by_operator dead letter back as the batch it names, oldest first', () => {
    const { db, writer } = memoryReadModel();
    writer.skipByOperator(skip({ firstOffset: 0, lastOffset: 3 }));
    writer.skipByOperator(skip({ firstOffset: 4, lastOffset: 4, reason: 'one more' }));
    writer.skipByOperator(skip({ partition: 2, firstOffset: 0, lastOffset: 1 }));
    expect(operatorSkipsIn(db)).toEqual([
      skip({ firstOffset: 0, lastOffset: 3 }),
      skip({ firstOffset: 4, lastOffset: 4, reason: 'one more' }),
      skip({ partition: 2, firstOffset: 0, lastOffset: 1 }),
    ]);
  });

  it('leaves out a dead letter whose detail does not read as a skip, and other reasons', () => {
    const { db } = memoryReadModel();
    const insert = db.prepare(
      `INSERT INTO dead_letters (topic, partition, "offset", reason, detail, recorded_at) VALUES (?, 0, ?, ?, ?, 'then')`,
    );
    insert.run(testTopics.orders, 1, 'skipped_by_operator', 'offsets 1–2 skipped by a@b: multi\nline why');
    insert.run(testTopics.orders, 5, 'skipped_by_operator', 'someone moved it');
    insert.run(testTopics.orders, 6, 'invalid_json', 'offset 6 skipped by a@b: not a skip');
    insert.run(testTopics.orders, 7, 'skipped_by_operator', 'offsets 7–8 skipped by: nobody');
    insert.run(testTopics.orders, 9, 'skipped_by_operator', 'moved: offsets 9–10 skipped by a@b: why');
    expect(operatorSkipsIn(db)).toEqual([
      {
        topic: testTopics.orders,
        partition: 0,
        firstOffset: 1,
        lastOffset: 2,
        by: 'a@b',
        reason: 'multi\nline why',
        at: 'then',
      },
    ]);
  });

  it('names one offset or a range, who and why', () => {
    expect(skipDetail(skip({ firstOffset: 7, lastOffset: 7 }))).toBe(
      'offset 7 skipped by ops@host-1: a producer bug: padded batch',
    );
    expect(skipDetail(skip())).toBe('offsets 4–9 skipped by ops@host-1: a producer bug: padded batch');
  });
});

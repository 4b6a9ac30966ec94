/**
 * An operator's skip (`skip-batch`) as every build meets it: the dead letter and position a writer
 * records, the skips read back from a model's dead letters (what a snapshot carries to a new
 * replica), and which unreadable batch a recorded skip covers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { operatorSkipsIn, skipCovering, type OperatorSkip } from '../../src/read-model/operator-skips.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const skip = (over: Partial<OperatorSkip> = {}): OperatorSkip => ({
  topic: testTopics.orders,
  partition: 0,
  from: 4,
  through: 9,
  reason: 'a producer bug: padded batch',
  by: 'ops@host-1',
  at: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('operator skips', () => {
  const dir = tempDir('operator-skips');

  it('records a dead letter and the position after the skipped offsets once, and reads the skip back', () => {
    const { db, writer } = memoryReadModel();
    expect(writer.skipByOperator(skip())).toEqual({ from: 0, next: 10 });
    expect(writer.storedOffset(testTopics.orders, 0)).toBe(10);
    // moved already (by the command, from another process, or earlier): nothing more is written
    expect(writer.skipByOperator(skip())).toEqual({ from: null, next: 10 });
    expect(writer.skipByOperator(skip({ through: 10, reason: 'one more' }))).toEqual({ from: 10, next: 11 });
    expect(operatorSkipsIn(db)).toEqual([
      { ...skip({ from: 0 }), at: '2026-01-01T00:00:00.000Z' },
      { ...skip({ from: 10, through: 10, reason: 'one more' }), at: '2026-01-01T00:00:00.000Z' },
    ]);
  });

  it('keeps the skips of a data directory in a file of its own, each once', () => {
    const files = new ModelFiles(join(dir, 'data'));
    expect(files.operatorSkips()).toEqual([]);
    files.recordOperatorSkip(skip());
    files.recordOperatorSkip(skip({ reason: 'the same batch again' }));
    files.recordOperatorSkip(skip({ partition: 2 }));
    expect(new ModelFiles(join(dir, 'data')).operatorSkips()).toEqual([skip(), skip({ partition: 2 })]);
    writeFileSync(files.skipsPath, '{"not":"a list"}');
    expect(() => files.operatorSkips()).toThrow(/not a list of skipped batches/);
  });

  it('covers an unreadable batch that overlaps the skipped offsets of its partition only', () => {
    const batch = { topic: testTopics.orders, partition: 0, offset: 4, lastOffset: 6 };
    expect(skipCovering([skip()], batch)).toEqual(skip());
    expect(skipCovering([skip()], { ...batch, offset: 9, lastOffset: 12 })).toEqual(skip());
    expect(skipCovering([skip()], { ...batch, offset: 10, lastOffset: 12 })).toBeUndefined();
    expect(skipCovering([skip()], { ...batch, offset: 1, lastOffset: 3 })).toBeUndefined();
    expect(skipCovering([skip()], { ...batch, offset: 1, lastOffset: null })).toBeUndefined();
    expect(skipCovering([skip()], { ...batch, partition: 1 })).toBeUndefined();
    expect(skipCovering([skip()], { ...batch, topic: testTopics.articles })).toBeUndefined();
    // recorded where no model had a position: any batch up to its last offset
    expect(skipCovering([skip({ from: null })], { ...batch, offset: 1, lastOffset: 3 })).toEqual(
      skip({ from: null }),
    );
  });
});

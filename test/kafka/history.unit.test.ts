import { describe, expect, it } from 'vitest';
import { describeGap, historyGaps, type AcceptedLoss } from '../../src/kafka/history.js';
import type { PartitionEnds } from '../../src/kafka/port.js';

const log = (start: number, end: number, partition = 0): PartitionEnds => ({
  topic: 't',
  partition,
  start,
  end,
});
const stored =
  (positions: Record<number, number>) =>
  (_topic: string, partition: number): number | undefined =>
    positions[partition];
const acceptance = (below: number, partition = 0): AcceptedLoss => ({
  topic: 't',
  partition,
  below,
  reason: 'gone',
  by: 'ops',
  at: '2026-11-27T00:00:00Z',
});

describe('the history a build needs (historyGaps)', () => {
  it('lets a model with no position read a whole log, and refuses a log that lost its first events', () => {
    expect(historyGaps([log(0, 10)], stored({}))).toEqual([]);
    expect(historyGaps([log(1, 10)], stored({}))).toEqual([
      { topic: 't', partition: 0, logStart: 1, logEnd: 10, needed: 0, kind: 'lost' },
    ]);
  });

  it('lets a model go on where the log still holds its position, and refuses it one offset past', () => {
    expect(historyGaps([log(7, 10)], stored({ 0: 7 }))).toEqual([]);
    expect(historyGaps([log(8, 10)], stored({ 0: 7 }))).toMatchObject([
      { needed: 7, logStart: 8, kind: 'lost' },
    ]);
  });

  it('lets an acceptance cover a log start up to its offset, and no further', () => {
    expect(historyGaps([log(5, 10)], stored({}), [acceptance(5)])).toEqual([]);
    expect(historyGaps([log(6, 10)], stored({}), [acceptance(5)])).toHaveLength(1);
    // the largest acceptance of a partition counts; another partition's does not
    expect(historyGaps([log(6, 10)], stored({}), [acceptance(6), acceptance(2)])).toEqual([]);
    expect(historyGaps([log(6, 10, 1)], stored({}), [acceptance(9)])).toHaveLength(1);
  });

  it('refuses a position past the log end whatever was accepted, and accepts one at the end', () => {
    expect(historyGaps([log(0, 10)], stored({ 0: 10 }))).toEqual([]);
    expect(historyGaps([log(0, 10)], stored({ 0: 11 }), [acceptance(20)])).toMatchObject([
      { needed: 11, logEnd: 10, kind: 'past-end' },
    ]);
  });

  it('refuses a topic whose id is not the one the model recorded, and compares nothing it does not know', () => {
    const ids = (recorded: Record<string, string>, current: Record<string, string>) => ({
      recorded: new Map(Object.entries(recorded)),
      current: new Map(Object.entries(current)),
    });
    expect(historyGaps([log(0, 10)], stored({ 0: 5 }), [], ids({ t: 'a' }, { t: 'b' }))).toMatchObject([
      { kind: 'other-topic' },
    ]);
    expect(historyGaps([log(0, 10)], stored({ 0: 5 }), [], ids({ t: 'a' }, { t: 'a' }))).toEqual([]);
    expect(historyGaps([log(0, 10)], stored({ 0: 5 }), [], ids({}, { t: 'b' }))).toEqual([]);
    expect(historyGaps([log(0, 10)], stored({ 0: 5 }), [], ids({ t: 'a' }, {}))).toEqual([]);
  });

  it('names the topic, the partition, the log start, what the model needs and the command', () => {
    const [gap] = historyGaps([log(5, 12)], stored({}));
    expect(describeGap(gap!)).toContain(
      't partition 0: the log starts at offset 5, and the model needs it from offset 0',
    );
    expect(describeGap(gap!)).toContain('accept-history-loss --topic t --partition 0 --below 5');
  });
});

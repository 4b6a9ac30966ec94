import { describe, expect, it } from 'vitest';
import { logSizeOf, replayLosesNothing, replayPays, ReplayWatch } from '../../src/lifecycle/replay-watch.js';
import { stuckReplays } from '../helpers/replays.js';

describe('when a replay pays', () => {
  it('takes a lag of at least the least lag and the least share of the log, and never with the replay off', () => {
    const options = { minLag: 100, minShare: 0.6 };
    expect(replayPays(600, 1000, options)).toBe(true);
    expect(replayPays(599, 1000, options)).toBe(false);
    expect(replayPays(100, 150, options)).toBe(true);
    expect(replayPays(99, 99, options)).toBe(false);
    expect(replayPays(0, 0, { minLag: 1, minShare: 0 })).toBe(false);
    expect(replayPays(10 ** 9, 10 ** 9, { minLag: null, minShare: 0 })).toBe(false);
  });

  it('replays only where the log still holds every message from offset 0, or from where a loss was accepted', () => {
    const ends = [
      { topic: 'a', partition: 0, start: 0, end: 25 },
      { topic: 'a', partition: 1, start: 40, end: 50 },
    ];
    // partition 1 lost its first 40 messages: a replay would build a model without them
    expect(replayLosesNothing(ends, [])).toBe(false);
    expect(replayLosesNothing([{ topic: 'a', partition: 0, start: 0, end: 9 }], [])).toBe(true);
    const accepted = (below: number) => [{ topic: 'a', partition: 1, below, reason: 'r', by: 'b', at: 't' }];
    expect(replayLosesNothing(ends, accepted(40))).toBe(true);
    expect(replayLosesNothing(ends, accepted(39))).toBe(false);
  });

  it('counts the messages of every partition from its start to its end', () => {
    expect(
      logSizeOf([
        { topic: 'a', partition: 0, start: 10, end: 25 },
        { topic: 'a', partition: 1, start: 0, end: 5 },
        { topic: 'b', partition: 0, start: 7, end: 7 },
      ]),
    ).toBe(20);
  });
});

describe('the replay watch', () => {
  it('runs one replay at a time, and waits after a failure, twice as long after two in a row', () => {
    const started: { aborted: boolean }[] = [];
    const watch = new ReplayWatch<string>(
      { minLag: 1, minShare: 0, start: stuckReplays(started), retry: { initialMs: 100, maxMs: 1000 } },
      { stallTimeoutMs: 50, now: () => 0 },
    );
    const first = watch.maybeStart('served', 10, 10, 0);
    expect(first).not.toBeNull();
    expect(watch.maybeStart('served', 10, 10, 1)).toBeNull();
    expect(watch.ended(first!, true, 10)).toBe(100);
    expect(watch.maybeStart('served', 10, 10, 109)).toBeNull();
    const second = watch.maybeStart('served', 10, 10, 110);
    expect(second).not.toBeNull();
    expect(watch.ended(second!, true, 200)).toBe(200);
    expect(watch.maybeStart('served', 10, 10, 399)).toBeNull();
    const third = watch.maybeStart('served', 10, 10, 400)!;
    expect(watch.ended(third, false, 500)).toBe(0);
    expect(watch.maybeStart('served', 10, 10, 500)).not.toBeNull();
    expect(started).toHaveLength(4);
  });

  it('aborts a replay whose progress has not moved for the stall timeout, once', () => {
    const started: { aborted: boolean }[] = [];
    const watch = new ReplayWatch<string>(
      { minLag: 1, minShare: 0, start: stuckReplays(started) },
      { stallTimeoutMs: 50, now: () => 0 },
    );
    watch.maybeStart('served', 10, 10, 0);
    expect(watch.abortIfStalled(50)).toBe(false);
    expect(started[0]!.aborted).toBe(false);
    expect(watch.abortIfStalled(51)).toBe(true);
    expect(started[0]!.aborted).toBe(true);
    expect(watch.abortIfStalled(52)).toBe(false);
  });

  it('never aborts a replay that has read every message: it is building its indexes', () => {
    const started: { aborted: boolean }[] = [];
    let report: (progress: { done: number; total: number; deadLetters: number }) => void = () => undefined;
    const watch = new ReplayWatch<string>(
      {
        minLag: 1,
        minShare: 0,
        start: (onProgress) => {
          report = onProgress;
          return stuckReplays(started)(onProgress);
        },
      },
      { stallTimeoutMs: 50, now: () => 10 },
    );
    watch.maybeStart('served', 10, 10, 0);
    report({ done: 9, total: 10, deadLetters: 0 });
    expect(watch.abortIfStalled(100)).toBe(true);
    report({ done: 10, total: 10, deadLetters: 0 });
    expect(watch.abortIfStalled(1000)).toBe(false);
    expect(started[0]!.aborted).toBe(true);
  });
});

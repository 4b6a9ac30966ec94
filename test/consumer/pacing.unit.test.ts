import { describe, expect, it } from 'vitest';
import {
  countRequest,
  newGiveWayFlag,
  newRequestCounter,
  Pacer,
  pause,
  setGiveWay,
} from '../../src/consumer/pacing.js';

describe('pacing a projector that gives way to requests', () => {
  const options = { share: 0.25, maxPauseMs: 200 };

  /** A pacer whose clock started with a first batch at `at` (a first batch is never paced). */
  function pacerAt(at: number, flag = newGiveWayFlag(true), opts = options) {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, flag, opts);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(at)).toBe(0);
    return { pacer, request: () => countRequest(requests) };
  }

  it('pauses three times what a batch took while requests arrive, so it works a quarter of the time', () => {
    const { pacer, request } = pacerAt(1000);
    request();
    expect(pacer.pauseAfterBatch(1010)).toBe(30);
    // The next batch's time starts after the pause.
    request();
    expect(pacer.pauseAfterBatch(1040 + 20)).toBe(60);
  });

  it('does not pause when no request arrived since the last batch', () => {
    const { pacer, request } = pacerAt(0);
    expect(pacer.pauseAfterBatch(10)).toBe(0);
    request();
    expect(pacer.pauseAfterBatch(20)).toBe(30);
    expect(pacer.pauseAfterBatch(60)).toBe(0);
  });

  it('never pauses while its flag is clear, and follows the flag as it changes', () => {
    const flag = newGiveWayFlag(false);
    const { pacer, request } = pacerAt(0, flag);
    request();
    expect(pacer.pauseAfterBatch(10)).toBe(0);
    setGiveWay(flag, true);
    request();
    expect(pacer.pauseAfterBatch(20)).toBe(30);
    setGiveWay(flag, false);
    request();
    expect(pacer.pauseAfterBatch(100)).toBe(0);
  });

  it('never pauses with a share of 1', () => {
    const { pacer, request } = pacerAt(0, newGiveWayFlag(true), { share: 1, maxPauseMs: 200 });
    request();
    expect(pacer.pauseAfterBatch(10)).toBe(0);
  });

  it('caps one pause and owes the rest to the next batches, so the share holds after long batches', () => {
    const { pacer, request } = pacerAt(0);
    request();
    // 100 ms of work owe 300 ms: 200 now, 100 carried over.
    expect(pacer.pauseAfterBatch(100)).toBe(200);
    request();
    // 10 ms more owe 30: 130 in all.
    expect(pacer.pauseAfterBatch(300 + 10)).toBe(130);
  });

  it('counts a gap longer than the longest pause as that long (waiting, not working), and the first batch as none', () => {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, newGiveWayFlag(true), options);
    countRequest(requests);
    // the first batch after a start of seconds (group join) only starts the clock
    expect(pacer.pauseAfterBatch(5000)).toBe(0);
    countRequest(requests);
    // 10 s without a batch counts as 200 ms: 600 owed, 200 paid now
    expect(pacer.pauseAfterBatch(15_000)).toBe(200);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(15_200)).toBe(200);
  });

  it('forgets what it owed once requests stop', () => {
    const { pacer, request } = pacerAt(0);
    request();
    expect(pacer.pauseAfterBatch(100)).toBe(200);
    expect(pacer.pauseAfterBatch(300 + 10)).toBe(0);
    request();
    expect(pacer.pauseAfterBatch(320)).toBe(30);
  });

  it('ends a pause as soon as the flag is cleared', async () => {
    const flag = newGiveWayFlag(true);
    const started = performance.now();
    setTimeout(() => setGiveWay(flag, false), 20);
    await pause(flag, 5000);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(15);
    expect(waited).toBeLessThan(2000);
    // with the flag already clear there is nothing to wait for
    const again = performance.now();
    await pause(flag, 5000);
    expect(performance.now() - again).toBeLessThan(1000);
  });
});

import { describe, expect, it } from 'vitest';
import { Pacer, pause } from '../../src/projector/pacing.js';
import { countRequest, newGiveWayFlag, newRequestCounter, setGiveWay } from '../../src/shared-flags.js';

describe('pacing a projector that gives way to requests', () => {
  const options = { share: 0.25, maxPauseMs: 200 };

  /**
   * A pacer whose clock started with a first batch done at `at` (a first batch is never paced);
   * `busy` hands it a batch after a request arrived, `quiet` one after none did.
   */
  function pacerAt(at: number, flag = newGiveWayFlag(true), opts = options) {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, flag, opts);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(at, at)).toBe(0);
    return {
      busy: (startedAt: number, endedAt: number): number => {
        countRequest(requests);
        return pacer.pauseAfterBatch(startedAt, endedAt);
      },
      quiet: (startedAt: number, endedAt: number): number => pacer.pauseAfterBatch(startedAt, endedAt),
    };
  }

  it('pauses three times what a batch took while requests arrive, so it works a quarter of the time', () => {
    const { busy } = pacerAt(1000);
    // 4 ms of fetch and 6 ms of handling
    expect(busy(1004, 1010)).toBe(30);
    // The next batch's time starts after the pause.
    expect(busy(1040, 1060)).toBe(60);
  });

  it('does not pause once no request has arrived for longer than the longest pause', () => {
    const { busy, quiet } = pacerAt(0);
    // the request seen at the start is 250 ms old
    expect(quiet(240, 250)).toBe(0);
    expect(busy(250, 260)).toBe(30);
    // no new request, but one was seen 140 ms ago: still pacing
    expect(quiet(290, 400)).toBe(200);
  });

  it('never pauses while its flag is clear, and follows the flag as it changes', () => {
    const flag = newGiveWayFlag(false);
    const { busy } = pacerAt(0, flag);
    expect(busy(0, 10)).toBe(0);
    setGiveWay(flag, true);
    expect(busy(10, 20)).toBe(30);
    setGiveWay(flag, false);
    expect(busy(50, 100)).toBe(0);
  });

  it('never pauses with a share of 1', () => {
    const { busy } = pacerAt(0, newGiveWayFlag(true), { share: 1, maxPauseMs: 200 });
    expect(busy(0, 10)).toBe(0);
  });

  it('caps one pause and owes the rest to the next batches, so the share holds after long batches', () => {
    const { busy } = pacerAt(0);
    // 100 ms of handling owe 300 ms: 200 now, 100 carried over.
    expect(busy(0, 100)).toBe(200);
    // 10 ms more owe 30: 130 in all.
    expect(busy(300, 310)).toBe(130);
  });

  it('counts a wait before a batch up to the longest pause, its handling in full, and the first batch as none', () => {
    // the first batch after a start of seconds (group join) only starts the clock
    const { busy } = pacerAt(5000);
    // 10 s of waiting count as 200 ms, 100 ms of handling in full: 900 owed, 200 paid now
    expect(busy(15_000, 15_100)).toBe(200);
    // the rest is paid after the next batches, at most 200 at a time
    const paid = [15_300, 15_500, 15_700, 15_900, 16_000].map((at) => busy(at, at));
    expect(paid).toEqual([200, 200, 200, 100, 0]);
  });

  it('forgets what it owed once requests stop', () => {
    const { busy, quiet } = pacerAt(0);
    expect(busy(0, 100)).toBe(200);
    // no request for 210 ms: nothing paid, nothing owed
    expect(quiet(300, 310)).toBe(0);
    expect(busy(310, 320)).toBe(30);
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

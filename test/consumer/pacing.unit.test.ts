import { describe, expect, it } from 'vitest';
import {
  countRequest,
  newGiveWayFlag,
  newRequestCounter,
  Pacer,
  setGiveWay,
} from '../../src/consumer/pacing.js';

describe('pacing a projector that gives way to requests', () => {
  const options = { share: 0.25, maxPauseMs: 200 };

  it('pauses three times what a batch took while requests arrive, so it works a quarter of the time', () => {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, newGiveWayFlag(true), 1000, options);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(1010)).toBe(30);
    // The next batch's time starts after the pause.
    countRequest(requests);
    expect(pacer.pauseAfterBatch(1040 + 20)).toBe(60);
  });

  it('does not pause when no request arrived since the last batch', () => {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, newGiveWayFlag(true), 0, options);
    expect(pacer.pauseAfterBatch(10)).toBe(0);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(20)).toBe(30);
    expect(pacer.pauseAfterBatch(60)).toBe(0);
  });

  it('never pauses while its flag is clear, and follows the flag as it changes', () => {
    const requests = newRequestCounter();
    const flag = newGiveWayFlag(false);
    const pacer = new Pacer(requests, flag, 0, options);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(10)).toBe(0);
    setGiveWay(flag, true);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(20)).toBe(30);
    setGiveWay(flag, false);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(100)).toBe(0);
  });

  it('never pauses with a share of 1', () => {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, newGiveWayFlag(true), 0, { share: 1, maxPauseMs: 200 });
    countRequest(requests);
    expect(pacer.pauseAfterBatch(10)).toBe(0);
  });

  it('caps one pause', () => {
    const requests = newRequestCounter();
    const pacer = new Pacer(requests, newGiveWayFlag(true), 0, options);
    countRequest(requests);
    expect(pacer.pauseAfterBatch(5000)).toBe(200);
  });
});

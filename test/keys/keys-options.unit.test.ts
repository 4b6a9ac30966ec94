import { describe, expect, it } from 'vitest';
import { keysFetchMaxWaitMs, keysPatienceMs, keysStartTimeoutMs } from '../../src/keys/keys-options.js';

describe("the keys consumer's patience", () => {
  it('is KEYS_STALL_MS at first, doubles for each consumer replaced in a row without a fetch, and stops at the start timeout', () => {
    expect(keysStartTimeoutMs).toBe(30_000);
    expect([0, 1, 2, 3, 4, 5].map((stalls) => keysPatienceMs(3000, stalls))).toEqual([
      3000, 6000, 12_000, 24_000, 30_000, 30_000,
    ]);
    expect(keysPatienceMs(20_000, 1)).toBe(30_000);
  });

  it('is never shorter than KEYS_STALL_MS, even when that is longer than the start timeout', () => {
    expect(keysPatienceMs(60_000, 0)).toBe(60_000);
    expect(keysPatienceMs(60_000, 3)).toBe(60_000);
  });
});

describe("the keys consumer's empty fetches", () => {
  it('come back at least three times within KEYS_STALL_MS, and at least once a second', () => {
    expect([3000, 6000, 600_000].map(keysFetchMaxWaitMs)).toEqual([1000, 1000, 1000]);
    expect([1500, 300, 100].map(keysFetchMaxWaitMs)).toEqual([500, 100, 33]);
    for (const stallMs of [1, 2, 29, 30, 31, 2999, 3001]) {
      const wait = keysFetchMaxWaitMs(stallMs);
      expect(wait).toBeGreaterThanOrEqual(10);
      expect(wait <= stallMs / 3 || wait === 10).toBe(true);
    }
  });
});

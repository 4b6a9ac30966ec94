import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/backoff.js';

describe('backoff', () => {
  it('starts at the initial delay and doubles with each attempt', () => {
    const backoff = { initialMs: 500, maxMs: 1_000_000 };
    expect([0, 1, 2, 3, 4].map((n) => backoffDelay(backoff, n))).toEqual([500, 1000, 2000, 4000, 8000]);
  });

  it('stops growing at the maximum', () => {
    const backoff = { initialMs: 500, maxMs: 30_000 };
    expect([0, 1, 2, 3, 6, 7, 100].map((n) => backoffDelay(backoff, n))).toEqual([
      500, 1000, 2000, 4000, 30_000, 30_000, 30_000,
    ]);
    // a maximum that is not a doubling of the initial delay is reached exactly
    expect([3, 4, 5].map((n) => backoffDelay({ initialMs: 1000, maxMs: 10_000 }, n))).toEqual([
      8000, 10_000, 10_000,
    ]);
  });

  it('stops doubling after 30 attempts, so that any number of attempts gives a finite delay', () => {
    const backoff = { initialMs: 1, maxMs: Number.MAX_VALUE };
    expect(backoffDelay(backoff, 30)).toBe(2 ** 30);
    expect(backoffDelay(backoff, 31)).toBe(2 ** 30);
    expect(backoffDelay(backoff, 5000)).toBe(2 ** 30);
    expect(backoffDelay({ initialMs: 0, maxMs: 1000 }, 5000)).toBe(0);
  });

  it('has no jitter: the same attempt always waits the same', () => {
    const backoff = { initialMs: 200, maxMs: 2000 };
    expect(Array.from({ length: 5 }, () => backoffDelay(backoff, 2))).toEqual([800, 800, 800, 800, 800]);
  });
});

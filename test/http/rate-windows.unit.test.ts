import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { newRateTable, RateWindows } from '../../src/http/rate-windows.js';

const limit = { max: 5, windowMs: 1000 };

describe('rate windows in shared memory', () => {
  it('count the requests of one key against one window whichever RateWindows counts them', () => {
    let now = 1_000_000;
    const clock = (): number => now;
    const table = newRateTable(now);
    const [a, b] = [new RateWindows(limit, clock, table), new RateWindows(limit, clock, table)];
    expect(a.take('k').count).toBe(1);
    expect(b.take('k').count).toBe(2);
    expect(a.take('other').count).toBe(1);
    b.giveBack('k', now);
    expect(a.headers('k', false)['x-ratelimit-remaining']).toBe('4');
    now += 999;
    expect(b.take('k')).toEqual({ count: 2, startedAtMs: 1_000_000, endsAtMs: 1_001_000 });
    now += 1;
    expect(a.take('k')).toEqual({ count: 1, startedAtMs: 1_001_000, endsAtMs: 1_002_000 });
  });

  it('give a key whose window has ended no slot of its own for long: the next key takes it over', () => {
    let now = 0;
    const windows = new RateWindows(limit, () => now, newRateTable(now, 2));
    windows.take('a');
    windows.take('b');
    // Both slots hold a current window: a third key is counted nowhere (it is not limited).
    expect(windows.take('c')).toEqual({ count: 0, startedAtMs: 0, endsAtMs: 1000 });
    now = 1000;
    expect(windows.take('c').count).toBe(1);
    expect(windows.take('c').count).toBe(2);
    expect(windows.take('a').count).toBe(1);
  });

  it("pass over another key's current window to a slot of their own, and never take it over", () => {
    // Four keys over two slots: some pairs share a home slot, so the second of such a pair meets the
    // first one's current window on its way.
    const keys = ['k0', 'k1', 'k2', 'k3'];
    for (const first of keys) {
      for (const second of keys.filter((key) => key !== first)) {
        const now = 5000;
        const windows = new RateWindows(limit, () => now, newRateTable(now, 2));
        for (let i = 0; i < 3; i++) windows.take(first);
        expect(windows.headers(second, false)['x-ratelimit-remaining'], `${first}, ${second}`).toBe('5');
        expect(windows.take(second), `${first}, ${second}`).toEqual({
          count: 1,
          startedAtMs: now,
          endsAtMs: 6000,
        });
        expect(windows.take(first).count, `${first}, ${second}`).toBe(4);
        windows.giveBack(second, now);
        expect(windows.headers(first, false)['x-ratelimit-remaining']).toBe('1');
        expect(windows.headers(second, false)['x-ratelimit-remaining']).toBe('5');
      }
    }
  });

  it('state the budget, its reset in whole seconds, and Retry-After for a limited answer', () => {
    let now = 10_400;
    const windows = new RateWindows(limit, () => now, newRateTable(now));
    expect(windows.headers('k', false)).toEqual({
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '5',
      'x-ratelimit-reset': '12',
    });
    for (let i = 0; i < 7; i++) windows.take('k');
    now = 10_900;
    expect(windows.headers('k', true)).toEqual({
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '12',
      'retry-after': '1',
    });
    windows.giveBack('k', 10_400);
    expect(windows.take('k').count).toBe(7);
    // a request counted in an earlier window is not given back to the current one
    now = 11_400;
    expect(windows.take('k').count).toBe(1);
    windows.giveBack('k', 10_900);
    expect(windows.take('k').count).toBe(2);
  });

  it('claim no slot to give back or to state the budget of a key with no window', () => {
    const now = 0;
    const windows = new RateWindows(limit, () => now, newRateTable(now, 2));
    for (const key of ['x', 'y', 'z']) {
      windows.giveBack(key, now);
      expect(windows.headers(key, false)['x-ratelimit-remaining']).toBe('5');
    }
    // both slots are still free
    expect(windows.take('a').count).toBe(1);
    expect(windows.take('b').count).toBe(1);
  });

  it('give back no more than was counted, and nothing to a window that has ended', () => {
    let now = 5;
    const windows = new RateWindows(limit, () => now, newRateTable(0));
    windows.take('k');
    windows.giveBack('k', 5);
    windows.giveBack('k', 5);
    expect(windows.take('k')).toEqual({ count: 1, startedAtMs: 5, endsAtMs: 1005 });
    now = 1005;
    windows.giveBack('k', 5);
    expect(windows.take('k')).toEqual({ count: 1, startedAtMs: 1005, endsAtMs: 2005 });
  });

  it('lose no count when threads take for the same key at once', async () => {
    const table = newRateTable(Date.now());
    const perThread = 200_000;
    const source = `
      const { workerData, parentPort } = require('node:worker_threads');
      import('tsx/esm/api')
        .then(({ tsImport }) => tsImport(workerData.module, workerData.parent))
        .then(({ RateWindows }) => {
          const windows = new RateWindows({ max: 1e6, windowMs: 600000 }, Date.now, workerData.table);
          for (let i = 0; i < workerData.perThread; i++) windows.take('shared-key');
          parentPort.postMessage('done');
        });
    `;
    const module = new URL('../../src/http/rate-windows.ts', import.meta.url).href;
    await Promise.all(
      Array.from({ length: 3 }, () => {
        const worker = new Worker(source, {
          eval: true,
          workerData: { module, parent: import.meta.url, table, perThread },
        });
        return new Promise((resolve, reject) => {
          worker.on('message', resolve);
          worker.on('error', reject);
        });
      }),
    );
    const windows = new RateWindows({ max: 1e6, windowMs: 600_000 }, Date.now, table);
    expect(windows.take('shared-key').count).toBe(3 * perThread + 1);
  });
});

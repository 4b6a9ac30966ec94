/**
 * The shared counts of held requests (`src/http/wait-counts.ts`): each key bounded by its own
 * count over every thread, even when keys' hashes share a home slot; the total bound; the places
 * and the lock of a thread that died given back by clearing its region.
 */
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  clearWaitRegion,
  heldRequests,
  lockWaitMs,
  newWaitTable,
  slotsFor,
  WaitCounts,
  window,
} from '../../src/http/wait-counts.js';

/** A key's SHA-256 (hex) with the given home (first 32 bits) and tag (next 32 bits). */
const shaOf = (home: number, tag: number): string =>
  home.toString(16).padStart(8, '0') + tag.toString(16).padStart(8, '0') + '0'.repeat(48);

describe('wait counts', () => {
  it('gives each key its own bound when the hashes of several share a home slot', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    // ten keys whose hashes pick the same home: each holds its 3, no fewer
    const keys = Array.from({ length: 10 }, (_, i) => shaOf(7, i + 1));
    for (const key of keys) {
      for (let n = 0; n < 3; n++) expect(counts.take(key, 3, 1000), `${key} #${n}`).not.toBeNull();
      expect(counts.take(key, 3, 1000), `${key} past its bound`).toBeNull();
    }
  });

  it('keeps each key to its bound and all to the total over three threads’ regions, exactly as counted one by one', () => {
    // 40 keys: homes a few slots apart (their windows overlap), some at the end of the table (the
    // window wraps to its start); a thread that dies has its region cleared and starts again
    const homeOf = (key: number): number => (key % 8 < 6 ? (key % 8) * 7 : 4096 - 1 - ((key % 8) - 6));
    const step = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({ kind: fc.constant('take' as const), region: fc.nat(2), key: fc.nat(39) }),
      },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('die' as const), region: fc.integer({ min: 1, max: 2 }) }),
      },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300, size: 'max' }), (steps) => {
        const table = newWaitTable(3);
        const threads = [0, 1, 2].map((region) => new WaitCounts(table, region));
        const perKey = 3;
        const total = 12;
        let held: { key: number; region: number; slot: number }[] = [];
        for (const s of steps) {
          if (s.kind === 'take') {
            const slot = threads[s.region]?.take(shaOf(homeOf(s.key), s.key + 1), perKey, total) ?? null;
            const ofKey = held.filter((h) => h.key === s.key).length;
            // refused exactly when the key is at its bound or every place is taken
            expect(slot === null, `take of key ${s.key} with ${ofKey} of it, ${held.length} in all`).toBe(
              ofKey >= perKey || held.length >= total,
            );
            if (slot !== null) held.push({ key: s.key, region: s.region, slot });
          } else if (s.kind === 'release') {
            const [gone] = held.splice(s.pick % Math.max(1, held.length), 1);
            if (gone !== undefined) threads[gone.region]?.release(gone.slot);
          } else {
            clearWaitRegion(table, s.region);
            held = held.filter((h) => h.region !== s.region);
          }
          expect(heldRequests(table)).toBe(held.length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('bounds two keys whose tags agree together, never one beyond its bound', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    // slots 50–119 in use, each by a key of its own home
    const others = new Map<number, number>();
    for (let at = 50; at < 120; at++) {
      const slot = counts.take(shaOf(at, 1000 + at), 3, 1000);
      expect(slot).toBe(at);
      others.set(at, slot ?? -1);
    }
    const k = shaOf(100, 7);
    for (let n = 0; n < 3; n++) expect(counts.take(k, 3, 1000)).toBe(120);
    // slot 105 is let go, and a key of home 50 with the same tag claims it
    counts.release(others.get(105) ?? -1);
    expect(counts.take(shaOf(50, 7), 3, 1000)).toBe(105);
    // the first key sees that slot of its tag too: it holds 3 already, it gets no more
    expect(counts.take(k, 3, 1000)).toBeNull();
  });

  it('counts a key whose hash has 32 zero bits where the tag is taken like any other', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    for (let n = 0; n < 3; n++) expect(counts.take(shaOf(20, 0), 3, 1000)).not.toBeNull();
    expect(counts.take(shaOf(20, 0), 3, 1000)).toBeNull();
    // another key of the same home still gets its own three
    for (let n = 0; n < 3; n++) expect(counts.take(shaOf(20, 5), 3, 1000)).not.toBeNull();
    expect(counts.take(shaOf(20, 5), 3, 1000)).toBeNull();
  });

  it('reuses a slot no held request uses, for another key', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    // as many keys as a window has slots, each letting go before the next: the slot is reused
    for (let i = 0; i < window; i++) {
      const slot = counts.take(shaOf(5, i + 1), 10, 1000);
      expect(slot).not.toBeNull();
      counts.release(slot ?? -1);
    }
    expect(counts.take(shaOf(5, 999), 10, 1000)).not.toBeNull();
  });

  it('refuses, never shares, when every slot of a key’s window is in use by other keys', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    for (let i = 0; i < window; i++) expect(counts.take(shaOf(5, i + 1), 10, 1000)).not.toBeNull();
    expect(counts.take(shaOf(5, 999), 10, 1000)).toBeNull();
    // a key of its own home elsewhere is unaffected
    expect(counts.take(shaOf(3000, 1), 10, 1000)).not.toBeNull();
  });

  it('gives back the places and the lock of a thread that died once its region is cleared', () => {
    const table = newWaitTable(2);
    const main = new WaitCounts(table, 0);
    const thread = new WaitCounts(table, 1);
    const key = shaOf(9, 9);
    expect(thread.take(key, 2, 1000)).not.toBeNull();
    expect(thread.take(key, 2, 1000)).not.toBeNull();
    expect(main.take(key, 2, 1000)).toBeNull();
    // the thread dies in the middle of a take: the lock word names its region (1) + 1
    new Int32Array(table)[0] = 2;
    const tried = performance.now();
    expect(main.take(shaOf(10, 1), 2, 1000), 'the lock is held: nothing is taken').toBeNull();
    // given up after its wait, not spinning for ever
    expect(performance.now() - tried).toBeGreaterThanOrEqual(lockWaitMs - 1);
    expect(performance.now() - tried).toBeLessThan(lockWaitMs + 200);
    clearWaitRegion(table, 1);
    expect(heldRequests(table)).toBe(0);
    expect(main.take(key, 2, 1000)).not.toBeNull();
    expect(main.take(key, 2, 1000)).not.toBeNull();
    expect(main.take(key, 2, 1000)).toBeNull();
    // clearing another region leaves a lock it does not hold
    new Int32Array(table)[0] = 1;
    clearWaitRegion(table, 1);
    expect(main.take(shaOf(11, 1), 2, 1000)).toBeNull();
    expect(() => new WaitCounts(table, 2)).toThrow(RangeError);
  });

  it('sizes its slots for the total it must hold, within 16 MiB', () => {
    expect(slotsFor(1000, 1)).toBe(4096);
    expect(slotsFor(100_000, 1)).toBe(262_144);
    expect(new Int32Array(newWaitTable(1, 100_000))[1]).toBe(262_144);
    // 64 request threads and a million held requests: 32 768 slots of 65 words
    expect(slotsFor(1_000_000, 64)).toBe(32_768);
    expect(newWaitTable(64, 1_000_000).byteLength).toBeLessThanOrEqual(16 * 1024 * 1024);
    // one thread and a million: 2^20 slots (2^21 and the header would not fit)
    expect(slotsFor(1_000_000, 1)).toBe(1 << 20);
    expect(newWaitTable(1, 1_000_000).byteLength).toBeLessThanOrEqual(16 * 1024 * 1024);
  });
  it('holds every bound while three worker threads take and release at once through the lock', async () => {
    // Six keys sharing two homes, bound 3 each and 12 in all. Each thread counts in `witness`
    // after a take and before its release, so the witness never exceeds what is really held: a
    // witness past a bound is a bound broken across threads.
    const threads = 3;
    const perKey = 3;
    const total = 12;
    const keys = Array.from({ length: 6 }, (_, i) => shaOf(i % 2 === 0 ? 5 : 6, i + 1));
    const table = newWaitTable(threads, 100);
    const witness = new SharedArrayBuffer(4 * (keys.length + 3));
    const source = `
      const { workerData, parentPort } = require('node:worker_threads');
      import('tsx/esm/api')
        .then(({ tsImport }) => tsImport(workerData.module, workerData.parent))
        .then(({ WaitCounts }) => {
          const { keys, perKey, total, region, rounds } = workerData;
          const counts = new WaitCounts(workerData.table, region);
          const seen = new Int32Array(workerData.witness);
          const all = keys.length;
          const mine = [];
          let state = region * 7919 + 1;
          const next = () => (state = (state * 1103515245 + 12345) >>> 0);
          let taken = 0;
          // all start together, or the first could be done before the last has loaded
          Atomics.add(seen, all + 2, 1);
          while (Atomics.load(seen, all + 2) < workerData.threads) Atomics.wait(seen, all + 2, Atomics.load(seen, all + 2), 1);
          for (let i = 0; i < rounds; i++) {
            if (mine.length > 0 && next() % 3 === 0) {
              const [key, slot] = mine.splice(next() % mine.length, 1)[0];
              Atomics.sub(seen, key, 1);
              Atomics.sub(seen, all, 1);
              counts.release(slot);
              continue;
            }
            const key = next() % all;
            const slot = counts.take(keys[key], perKey, total);
            if (slot === null) continue;
            taken++;
            const ofKey = Atomics.add(seen, key, 1) + 1;
            const inAll = Atomics.add(seen, all, 1) + 1;
            if (ofKey > perKey || inAll > total) Atomics.add(seen, all + 1, 1);
            mine.push([key, slot]);
          }
          for (const [key, slot] of mine) {
            Atomics.sub(seen, key, 1);
            Atomics.sub(seen, all, 1);
            counts.release(slot);
          }
          parentPort.postMessage(taken);
        });
    `;
    const module = new URL('../../src/http/wait-counts.ts', import.meta.url).href;
    const taken = await Promise.all(
      Array.from({ length: threads }, (_, region) => {
        const worker = new Worker(source, {
          eval: true,
          workerData: {
            module,
            parent: import.meta.url,
            table,
            witness,
            keys,
            perKey,
            total,
            region,
            rounds: 60_000,
          },
        });
        return new Promise<number>((resolve, reject) => {
          worker.on('message', resolve);
          worker.on('error', reject);
        });
      }),
    );
    const seen = new Int32Array(witness);
    expect(seen[keys.length + 1], 'takes past a bound').toBe(0);
    // every thread got places, so they contended for the same slots
    for (const n of taken) expect(n).toBeGreaterThan(1000);
    expect(heldRequests(table)).toBe(0);
    // every place was given back: each key holds its full bound again, no more
    const counts = new WaitCounts(table, 0);
    for (const key of keys.slice(0, 4)) {
      for (let n = 0; n < perKey; n++) expect(counts.take(key, perKey, total)).not.toBeNull();
      expect(counts.take(key, perKey, total)).toBeNull();
    }
  });
});

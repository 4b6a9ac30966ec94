/**
 * The shared counts of held requests (`src/http/wait-counts.ts`): each key bounded by its own
 * count over every thread, even when keys' hashes share a home slot; the total bound; the places
 * and the lock of a thread that died given back by clearing its region.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  clearWaitRegion,
  heldRequests,
  newWaitTable,
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

  it('keeps each key to its bound and all to the total over two threads, exactly as counted one by one', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            take: fc.boolean(),
            region: fc.integer({ min: 0, max: 1 }),
            // 40 keys over 4 homes: many share one
            key: fc.integer({ min: 0, max: 39 }),
            pick: fc.nat(),
          }),
          { maxLength: 400 },
        ),
        (steps) => {
          const table = newWaitTable(2);
          const threads = [new WaitCounts(table, 0), new WaitCounts(table, 1)];
          const perKey = 3;
          const total = 50;
          const held: { key: number; region: number; slot: number }[] = [];
          for (const step of steps) {
            if (step.take) {
              const slot = threads[step.region]?.take(
                shaOf((step.key % 4) * 1000, step.key + 1),
                perKey,
                total,
              );
              const ofKey = held.filter((h) => h.key === step.key).length;
              // refused exactly when the key is at its bound or every place is taken
              expect(slot === null).toBe(ofKey >= perKey || held.length >= total);
              if (slot !== null && slot !== undefined)
                held.push({ key: step.key, region: step.region, slot });
            } else if (held.length > 0) {
              const [gone] = held.splice(step.pick % held.length, 1);
              if (gone !== undefined) threads[gone.region]?.release(gone.slot);
            }
            expect(heldRequests(table)).toBe(held.length);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reuses a slot no held request uses, for another key', () => {
    const counts = new WaitCounts(newWaitTable(1), 0);
    // fill a home's whole window with keys that then let go
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
    expect(main.take(shaOf(10, 1), 2, 1000), 'the lock is held: nothing is taken').toBeNull();
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

  it('sizes its slots for the total it must hold', () => {
    const small = new Int32Array(newWaitTable(1, 1000));
    const large = new Int32Array(newWaitTable(1, 100_000));
    expect(small[1]).toBe(4096);
    expect(large[1]).toBe(262_144);
  });
});

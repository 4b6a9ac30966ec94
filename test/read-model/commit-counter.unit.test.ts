/**
 * The commit counter a keys lookup's cache rests on (`key-lookup.ts`): odd while a transaction may
 * be committing, even and moved once it has ended, so a value taken before a read and found again
 * after it proves nothing was committed in between.
 */
import { describe, expect, it } from 'vitest';
import { counted, newCommitCounter, settledCount } from '../../src/read-model/commit-counter.js';

describe('the commit counter', () => {
  it('starts settled at 0, in memory other threads can share', () => {
    const counter = newCommitCounter();
    expect(counter.length).toBe(1);
    expect(counter.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(settledCount(counter)).toBe(0);
  });

  it('is unsettled while a transaction runs, and settled at a new value once it has ended', () => {
    const counter = newCommitCounter();
    const during: (number | null)[] = [];
    expect(counted(counter, () => (during.push(settledCount(counter)), 'result'))).toBe('result');
    expect(during).toEqual([null]);
    expect(settledCount(counter)).toBe(2);
    counted(counter, () => during.push(settledCount(counter)));
    expect(during).toEqual([null, null]);
    expect(settledCount(counter)).toBe(4);
  });

  it('is settled again after a transaction that threw', () => {
    const counter = newCommitCounter();
    expect(() =>
      counted(counter, () => {
        throw new Error('constraint failed');
      }),
    ).toThrow('constraint failed');
    expect(settledCount(counter)).toBe(2);
  });

  it('stays unsettled after a writer that died inside a transaction until its successor has committed', () => {
    const counter = newCommitCounter();
    Atomics.add(counter, 0, 1); // a writer's thread ended inside a transaction
    expect(settledCount(counter)).toBeNull();
    const during: (number | null)[] = [];
    counted(counter, () => during.push(settledCount(counter)));
    expect(during).toEqual([null]);
    expect(settledCount(counter)).toBe(4);
  });

  it('runs a transaction of a writer that counts nothing as it is', () => {
    expect(counted(undefined, () => 'result')).toBe('result');
  });
});

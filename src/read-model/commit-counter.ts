/**
 * A model file's commits counted in shared memory, for caches in other threads: odd while a
 * transaction of its writer may be committing, moved again once it has ended. A value read before
 * and after a read of the file, equal and even, proves no commit happened in between; any commit
 * since moves it. Read by `keys/key-lookup.ts`, whose cache rests on it.
 */
export type CommitCounter = Int32Array;

export function newCommitCounter(): CommitCounter {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/**
 * Runs `transaction` with the counter odd around it: a value taken while it runs, or before it and
 * compared after it, never passes as unchanged. A writer that dies inside leaves the counter odd,
 * so nothing is cached until its successor's next transaction has ended.
 */
export function counted<T>(counter: CommitCounter | undefined, transaction: () => T): T {
  if (counter === undefined) return transaction();
  Atomics.add(counter, 0, Atomics.load(counter, 0) % 2 === 0 ? 1 : 2);
  try {
    return transaction();
  } finally {
    Atomics.add(counter, 0, 1);
  }
}

/** The counter's value when no commit is under way; null while one may be. */
export function settledCount(counter: CommitCounter): number | null {
  const value = Atomics.load(counter, 0);
  return value % 2 === 0 ? value : null;
}

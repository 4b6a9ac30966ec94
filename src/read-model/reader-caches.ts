/**
 * What a reader remembers of one state of its file (`ReadModelReader`): the digests and the
 * position it has read, valid for one `data_version` of the file, forgotten when a commit is
 * reported through the cache epochs shared by the readers of the file or when they grow old.
 */

export interface CacheOptions {
  /**
   * Remember digests and the position once read, as of one state of the file: a 304 then reads
   * nothing. A request that goes to the file runs in one read transaction that checks SQLite's
   * `data_version` first and starts what it remembers over when another connection has
   * committed, so what is remembered is always of one state of the file, and the tag, the page and
   * the position of one answer are of the same one. Forgotten at `forgetChanges()`, or after at
   * most `changesCacheMs`.
   * Only for a reader whose owner calls `forgetChanges()` after every commit (the service does on
   * each batch of its projector thread) and whose connection does not write.
   */
  cacheChanges?: boolean;
  /**
   * Where `forgetChanges()` is counted (`newCacheEpochs`): readers of one file
   * in several threads share it, so that a commit reported to one makes every one of them forget.
   */
  epochs?: Int32Array;
}

/** Slots of a reader's cache epochs: each moves when the caches of that kind must be forgotten. */
const changesEpoch = 0;

/** Cache epochs in shared memory, for the readers of one model file in every thread. */
export function newCacheEpochs(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
}

/** How long a remembered state is trusted without a report of a commit. */
export const changesCacheMs = 1000;

/** Bound on remembered digests; past it the cache starts over. */
const maxCachedKeys = 10_000;

/** The digests and position of one state of the file, as far as they have been read. */
export class ReadCache {
  /** digest key (`o<org>`, `a<order>`) → tag part, valid for `version`; null when not caching */
  private readonly digests: Map<string, string> | null;
  private readonly epochs: Int32Array;
  private epochSeen: number;
  private rememberedSince = performance.now();
  private version: number | null = null;
  /** The state's position (`Positions`) once read; null until then. */
  position: ReadonlyMap<string, number> | null = null;

  constructor(options: CacheOptions) {
    this.digests = options.cacheChanges === true ? new Map() : null;
    this.epochs = options.epochs ?? newCacheEpochs();
    this.epochSeen = Atomics.load(this.epochs, changesEpoch);
  }

  get caching(): boolean {
    return this.digests !== null;
  }

  /**
   * At the start of a request: forgets the state when `fresh`, when a commit has been reported
   * since it was started, or when it is older than `changesCacheMs`.
   */
  startRequest(fresh: boolean): void {
    const epoch = Atomics.load(this.epochs, changesEpoch);
    if (fresh || epoch !== this.epochSeen || performance.now() - this.rememberedSince > changesCacheMs) {
      this.forget();
      this.epochSeen = epoch;
      this.rememberedSince = performance.now();
    }
  }

  /** True when a state's position is remembered (with whatever digests of it were read). */
  remembers(): boolean {
    return this.version !== null && this.position !== null;
  }

  /** Makes every reader sharing the epochs forget its state, and wakes what waits for a commit (`http/change-waits.ts`). */
  reportCommit(): void {
    Atomics.add(this.epochs, changesEpoch, 1);
    Atomics.notify(this.epochs, changesEpoch);
  }

  /** The epochs when this cache follows commits (`cacheChanges`), else null: no commit is reported to it. */
  commitEpochs(): Int32Array | null {
    return this.digests === null ? null : this.epochs;
  }

  /**
   * In a read transaction: what is remembered becomes of its state if the file changed since
   * (`dataVersion`, read only when caching). A reader that does not cache reads the position again
   * in each transaction.
   */
  follow(dataVersion: () => number): void {
    if (this.digests === null) {
      this.position = null;
      return;
    }
    const version = dataVersion();
    if (version !== this.version) {
      this.forget();
      this.version = version;
    }
  }

  digest(key: string): string | undefined {
    return this.digests?.get(key);
  }

  rememberDigest(key: string, digest: string): void {
    const digests = this.digests;
    if (digests === null) return;
    if (digests.size >= maxCachedKeys) digests.clear();
    digests.set(key, digest);
  }

  private forget(): void {
    this.digests?.clear();
    this.position = null;
    this.version = null;
  }
}

/**
 * The windows of the rate limit, in shared memory, so that every request thread counts against the
 * same budget of a key. A table of slots, each two 64-bit words: the key's fingerprint, and its
 * window (start, count) packed in one word that a compare-and-swap moves, so two threads counting
 * one key at once both count. A slot whose window has ended is taken over by the next key that
 * needs one; in that race one request may be counted for the new key instead of the old.
 */
export interface RateLimit {
  max: number;
  windowMs: number;
}

export interface Window {
  /** requests counted in this window, those answered 429 included */
  count: number;
  startedAtMs: number;
  endsAtMs: number;
}

/**
 * Slots (1 MiB of shared memory): keys with a window at once. A key whose 64 neighbouring slots
 * all hold current windows of other keys is not limited until one ends.
 */
const defaultSlots = 1 << 16;
/** Slots looked at from a key's own before giving up (a full neighbourhood: the request is not limited). */
const maxProbes = 64;
const countBits = 22n;
const countMask = (1n << countBits) - 1n;
const fingerprintMask = (1n << 62n) - 1n;

/**
 * A table for `RateWindows` of every thread. Word 0 holds the time its window starts are counted
 * from, so they fit beside the count in one word.
 */
export function newRateTable(nowMs: number, slots = defaultSlots): SharedArrayBuffer {
  const buffer = new SharedArrayBuffer((1 + 2 * slots) * BigInt64Array.BYTES_PER_ELEMENT);
  new BigInt64Array(buffer)[0] = BigInt(nowMs);
  return buffer;
}

/** Two FNV-1a hashes of the key, as one non-zero 62-bit fingerprint. */
function fingerprintOf(key: string): bigint {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  return (((BigInt(a >>> 0) << 32n) | BigInt(b >>> 0)) & fingerprintMask) | 1n;
}

export class RateWindows {
  private readonly words: BigInt64Array;
  private readonly slots: number;
  private readonly base: number;

  constructor(
    readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
    table: SharedArrayBuffer = newRateTable(now()),
  ) {
    this.words = new BigInt64Array(table);
    this.slots = (this.words.length - 1) / 2;
    this.base = Number(this.words[0]);
  }

  /** Counts one request of `key`; the window it was counted in. */
  take(key: string): Window {
    const now = this.now();
    const at = this.slotOf(key, now);
    if (at === null) return { count: 0, startedAtMs: now, endsAtMs: now + this.limit.windowMs };
    for (;;) {
      const state = Atomics.load(this.words, at);
      const window = this.windowOf(state, now);
      const next =
        window === null
          ? this.pack(now, 1)
          : this.pack(window.startedAtMs, Math.min(window.count + 1, Number(countMask)));
      if (Atomics.compareExchange(this.words, at, state, next) === state) return this.unpack(next);
    }
  }

  /** Gives back a request of `key` counted at `countedAtMs`, unless its window has ended since. */
  giveBack(key: string, countedAtMs: number): void {
    const now = this.now();
    const at = this.slotOf(key, now, false);
    if (at === null) return;
    for (;;) {
      const state = Atomics.load(this.words, at);
      const window = this.windowOf(state, now);
      if (window === null || window.startedAtMs > countedAtMs || window.count === 0) return;
      const next = this.pack(window.startedAtMs, window.count - 1);
      if (Atomics.compareExchange(this.words, at, state, next) === state) return;
    }
  }

  /** The budget headers of `key` as they stand (a key with no current window has its whole budget). */
  headers(key: string, limited: boolean): Record<string, string> {
    const now = this.now();
    const at = this.slotOf(key, now, false);
    const window = at === null ? null : this.windowOf(Atomics.load(this.words, at), now);
    const count = window?.count ?? 0;
    const endsAtMs = window?.endsAtMs ?? now + this.limit.windowMs;
    const headers: Record<string, string> = {
      'x-ratelimit-limit': String(this.limit.max),
      'x-ratelimit-remaining': String(Math.max(0, this.limit.max - count)),
      'x-ratelimit-reset': String(Math.ceil(endsAtMs / 1000)),
    };
    if (limited) headers['retry-after'] = String(Math.max(1, Math.ceil((endsAtMs - now) / 1000)));
    return headers;
  }

  /**
   * The index of the word holding `key`'s window: its own slot, found by probing from its home
   * slot; with `claim`, one is claimed (an empty slot, or the first whose window has ended) when it
   * has none. null: none found (or none free within `maxProbes`).
   */
  private slotOf(key: string, now: number, claim = true): number | null {
    const fingerprint = fingerprintOf(key);
    const home = Number(fingerprint % BigInt(this.slots));
    // Another thread may claim a slot of the neighbourhood meanwhile: then look again.
    for (let attempt = 0; attempt < maxProbes; attempt++) {
      let ended: number | null = null;
      let empty: number | null = null;
      for (let probe = 0; probe < maxProbes && empty === null; probe++) {
        const at = 1 + 2 * ((home + probe) % this.slots);
        const held = Atomics.load(this.words, at);
        if (held === fingerprint) return at + 1;
        if (held === 0n) empty = at;
        else if (ended === null && this.hasEnded(at, now)) ended = at;
      }
      if (!claim) return null;
      if (ended !== null) {
        // Taken over by moving its ended window to a current empty one first: one thread wins that,
        // and no other sees the slot as free while the fingerprint changes.
        const state = Atomics.load(this.words, ended + 1);
        // Stryker disable ConditionalExpression,LogicalOperator: each check here fails only when another thread claimed or counted between the probe and here, so one thread cannot tell a check dropped (true, ||) from kept; Stryker marks by mutator, so the whole condition as false, which the tests kill, is marked with them
        if (
          state !== 0n &&
          this.windowOf(state, now) === null &&
          Atomics.compareExchange(this.words, ended + 1, state, this.pack(now, 0)) === state
        ) {
          // Stryker restore ConditionalExpression,LogicalOperator
          Atomics.store(this.words, ended, fingerprint);
          return ended + 1;
        }
      } else if (empty !== null) {
        // Stryker disable next-line EqualityOperator: fails only when another thread claimed the slot first; one thread alone finds its own claim at the next look
        if (Atomics.compareExchange(this.words, empty, 0n, fingerprint) === 0n) return empty + 1;
      } else return null;
    }
    return null;
  }

  /**
   * Whether the key of the slot at `at` has a window that ended. A slot claimed a moment ago holds no
   * window yet (0): it is not free.
   */
  private hasEnded(at: number, now: number): boolean {
    const state = Atomics.load(this.words, at + 1);
    return state !== 0n && this.windowOf(state, now) === null;
  }

  private windowOf(state: bigint, now: number): Window | null {
    if (state === 0n) return null;
    const window = this.unpack(state);
    return window.endsAtMs > now ? window : null;
  }

  private pack(startedAtMs: number, count: number): bigint {
    return (BigInt(startedAtMs - this.base) << countBits) | BigInt(count);
  }

  private unpack(state: bigint): Window {
    const startedAtMs = this.base + Number(state >> countBits);
    return { count: Number(state & countMask), startedAtMs, endsAtMs: startedAtMs + this.limit.windowMs };
  }
}

/**
 * The counts of held waiting requests, shared by every request thread (`SharedArrayBuffer`): the
 * one place where the bounds WAIT_MAX_PER_KEY and WAIT_MAX_REQUESTS are kept.
 *
 * - **Regions.** Each thread counts only what it holds itself, in a region of its own (the main
 *   thread's is 0, request thread `i`'s is `i`); a bound is checked against the sum over the
 *   regions. A thread that dies holding requests leaves its counts in its region, which is cleared
 *   when it has exited (`clearWaitRegion`), so no place is lost for good.
 * - **Per key.** A key's hash gives it a home among the table's slots and a 32-bit tag. It counts in
 *   the slot of its tag within `window` slots of its home, or claims the first there that no held
 *   request uses. Its bound is checked on every slot of its tag in the window: two keys share a
 *   bound only if their hashes agree in those 32 bits too, and no key is ever held beyond it.
 * - **One lock.** Claims and increments are made under one lock word, so no two threads give a key
 *   two slots or take the last place twice; a release only decrements (it can only make a check
 *   stricter). The lock word names its holder's region: a thread that dies holding it is let go by
 *   `clearWaitRegion`. A thread that cannot take it within `lockWaitMs` holds nothing: the request
 *   is answered at once, never more than a bound.
 */

/** Header words: the lock (0 free, else its holder's region + 1), then the number of slots. */
const lockWord = 0;
const slotsWord = 1;
const headerWords = 2;
/** Slots looked at from a key's home: with at most half the slots in use, a run this long is rare. */
export const window = 64;
/** Tries of the lock before sleeping on it, and how long a thread waits for it in all. */
const spins = 200;
export const lockWaitMs = 10;
const minSlots = 4096;
/** The table's size at most: (1 + regions) words per slot. */
const maxTableBytes = 16 * 1024 * 1024;

/**
 * Slots for `total` held requests at once on `regions` threads: twice as many (a power of two), at
 * least 4 096, and as many as fit in `maxTableBytes`.
 */
export function slotsFor(total: number, regions: number): number {
  let slots = minSlots;
  // the header and each region's total count too
  const most = (maxTableBytes / Int32Array.BYTES_PER_ELEMENT - headerWords - regions) / (1 + regions);
  while (slots < 2 * total && slots * 2 <= most) slots *= 2;
  return slots;
}

/**
 * A table for `regions` threads holding at most `total` requests at once: the header, one tag per
 * slot, then each region's counters (the region's total, then one per slot).
 */
export function newWaitTable(regions = 1, total = 1000): SharedArrayBuffer {
  const slots = slotsFor(total, regions);
  const table = new SharedArrayBuffer(
    Int32Array.BYTES_PER_ELEMENT * (headerWords + slots * (1 + regions) + regions),
  );
  new Int32Array(table)[slotsWord] = slots;
  return table;
}

interface Layout {
  words: Int32Array;
  slots: number;
  /** the first tag's index */
  tags: number;
  /** the first region's index */
  regions: number;
  regionLength: number;
  regionCount: number;
}

function layoutOf(table: SharedArrayBuffer): Layout {
  const words = new Int32Array(table);
  const slots = Atomics.load(words, slotsWord);
  const regionLength = 1 + slots;
  const regions = headerWords + slots;
  return {
    words,
    slots,
    tags: headerWords,
    regions,
    regionLength,
    regionCount: (words.length - regions) / regionLength,
  };
}

/** Counter `at` (0 the total, 1 + slot a key's) summed over every region. */
function sumOf(layout: Layout, at: number): number {
  let sum = 0;
  for (let i = layout.regions + at; i < layout.words.length; i += layout.regionLength) {
    sum += Atomics.load(layout.words, i);
  }
  return sum;
}

/** Requests held now on every thread of `table`. */
export function heldRequests(table: SharedArrayBuffer): number {
  return sumOf(layoutOf(table), 0);
}

/** Forgets what the thread of `region` held, and lets go of the lock if it held it: once it has exited. */
export function clearWaitRegion(table: SharedArrayBuffer, region: number): void {
  const layout = layoutOf(table);
  const start = layout.regions + region * layout.regionLength;
  for (let i = start; i < start + layout.regionLength; i++) Atomics.store(layout.words, i, 0);
  Atomics.compareExchange(layout.words, lockWord, region + 1, 0);
}

/** One thread's use of the table: `take` a place for a key, `release` it when the request ends. */
export class WaitCounts {
  private readonly layout: Layout;
  private readonly own: number;

  constructor(
    table: SharedArrayBuffer,
    private readonly region: number,
  ) {
    this.layout = layoutOf(table);
    if (region < 0 || region >= this.layout.regionCount) throw new RangeError(`no wait region ${region}`);
    this.own = this.layout.regions + region * this.layout.regionLength;
  }

  /**
   * A place for one more held request of the key whose SHA-256 (hex) is `keySha256`, if that key
   * holds fewer than `perKey` and every thread fewer than `total`: its slot, or null (nothing taken).
   */
  take(keySha256: string, perKey: number, total: number): number | null {
    const { words, slots, tags } = this.layout;
    // (a text that is not hex reads as home 0, tag 1: bounded, like any other key)
    const home = (Number.parseInt(keySha256.slice(0, 8), 16) >>> 0) % slots;
    const tag = Number.parseInt(keySha256.slice(8, 16), 16) | 0 || 1;
    if (!this.lock()) return null;
    try {
      if (sumOf(this.layout, 0) >= total) return null;
      let free = -1;
      let slot = -1;
      // what every slot of this tag in the window holds: another key of the same tag shares the bound
      let held = 0;
      for (let probe = 0; probe < window; probe++) {
        const at = (home + probe) % slots;
        const owner = Atomics.load(words, tags + at);
        if (owner === tag) {
          if (slot < 0) slot = at;
          held += sumOf(this.layout, 1 + at);
        } else if (owner === 0) {
          // never claimed: no slot of this key lies beyond it (tags are replaced, never cleared)
          if (free < 0) free = at;
          break;
        } else if (free < 0 && sumOf(this.layout, 1 + at) === 0) {
          free = at;
        }
      }
      if (held >= perKey) return null;
      if (slot < 0) {
        if (free < 0) return null;
        slot = free;
        Atomics.store(words, tags + slot, tag);
      }
      Atomics.add(words, this.own, 1);
      Atomics.add(words, this.own + 1 + slot, 1);
      return slot;
    } finally {
      this.unlock();
    }
  }

  /** Gives back a place `take` gave. */
  release(slot: number): void {
    Atomics.sub(this.layout.words, this.own + 1 + slot, 1);
    Atomics.sub(this.layout.words, this.own, 1);
  }

  /**
   * Takes the lock: a few tries at once (it is held for microseconds), then sleeps until it is let
   * go, so that a holder on a busy core gets to run; false after `lockWaitMs` (its holder died, or
   * stalls): the request is then answered at once.
   */
  private lock(): boolean {
    const { words } = this.layout;
    const me = this.region + 1;
    let deadline = 0;
    for (let i = 0; ; i++) {
      const holder = Atomics.compareExchange(words, lockWord, 0, me);
      if (holder === 0) return true;
      if (i < spins) continue;
      const now = performance.now();
      if (deadline === 0) deadline = now + lockWaitMs;
      else if (now > deadline) return false;
      Atomics.wait(words, lockWord, holder, 1);
    }
  }

  private unlock(): void {
    Atomics.compareExchange(this.layout.words, lockWord, this.region + 1, 0);
    Atomics.notify(this.layout.words, lockWord);
  }
}

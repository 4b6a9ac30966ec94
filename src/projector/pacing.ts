/**
 * Giving way to API requests. A candidate model catching up (a version candidate, an adopted
 * proposal) is work nobody waits for by the minute, while the requests answered meanwhile are; on a
 * machine with few cores the two compete for the same CPU. So the request thread counts the
 * requests it receives in shared memory, and a projector told to give way pauses after each batch
 * while requests keep arriving, working at most `share` of the wall-clock time. With no requests
 * it runs at full speed. The served model's projector never gives way: its freshness (revocations
 * included) is what the API answers from.
 */
import { givesWay } from '../shared-flags.js';

/** Waits `ms`, or less if the flag is cleared meanwhile (the switch to serve the model has begun). */
export async function pause(flag: Int32Array, ms: number): Promise<void> {
  const wait = Atomics.waitAsync(flag, 0, 1, ms);
  if (wait.async) await wait.value;
}

export interface PacingOptions {
  /** the most of the wall-clock time a projector giving way works while requests arrive */
  share: number;
  /** the longest single pause (the rest is owed to the next batches) */
  maxPauseMs: number;
}

/**
 * The longest single pause after a batch. A pause owed beyond it is carried over to the next
 * batches, so the share holds after long batches too, and stopping never waits longer than this.
 */
export const maxPauseMs = 1000;

/**
 * Requests come first: when both want more CPU than there is, the thread answering them wins and
 * the projector catches up with what is left (lag is what /readyz watches). Linux gives each
 * thread its own nice value; elsewhere the thread keeps the process's priority.
 */
export const PROJECTOR_THREAD_NICE = 5;

/**
 * Decides the pause after each batch. A batch's work is the time from the end of the previous
 * pause to the end of the batch: the fetch before it (so the broker's work for this projector is
 * paced too), counted up to `maxPauseMs` (beyond it the thread was more likely waiting for its
 * group to form or for new messages than working), and its handling, counted in full. The first
 * batch only starts the clock. Requests count as arriving while one was seen within `maxPauseMs`;
 * what is owed is forgotten once they stop.
 */
export class Pacer {
  private seen: number;
  private lastRequestAt = Number.NEGATIVE_INFINITY;
  private since: number | null = null;
  /** pause owed by batches whose pause was capped */
  private owed = 0;

  constructor(
    private readonly requests: Int32Array,
    private readonly giveWay: Int32Array,
    private readonly options: PacingOptions,
  ) {
    this.seen = Atomics.load(requests, 0);
  }

  /**
   * Milliseconds to pause after a batch handed over at `startedAt` and done at `now`; 0 when no
   * request arrived lately or the projector does not give way.
   */
  pauseAfterBatch(startedAt: number, now: number): number {
    const { share, maxPauseMs } = this.options;
    const count = Atomics.load(this.requests, 0);
    if (count !== this.seen) this.lastRequestAt = now;
    this.seen = count;
    const worked =
      this.since === null
        ? 0
        : Math.min(maxPauseMs, Math.max(0, startedAt - this.since)) + Math.max(0, now - startedAt);
    this.since = now;
    if (now - this.lastRequestAt > maxPauseMs || share >= 1 || !givesWay(this.giveWay)) {
      this.owed = 0;
      return 0;
    }
    this.owed += (worked * (1 - share)) / share;
    const pause = Math.min(maxPauseMs, this.owed);
    this.owed -= pause;
    this.since = now + pause;
    return pause;
  }
}

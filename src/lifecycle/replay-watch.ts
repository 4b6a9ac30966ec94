/**
 * When a replica catches up by replay, and the watchdog of a replay under way (`catch-up.ts` runs
 * them). A replica far behind rebuilds its model from the start of the topics with
 * the `rebuild` command's machinery (a bulk-load file, the articles in a thread of their own: 1.5 to
 * 1.8 times the live projector's events per second at 1 000 000 orders, bench/README.md) instead of applying its backlog batch by batch.
 * The served model keeps answering meanwhile, its projector stopped so that the replay has the
 * cores; the new model is proposed like any rebuild, and served once it has reached the served one
 * (the one switch of every candidate, which never serves an older model).
 *
 * Far behind means: a lag of at least `minLag` messages that is also at least `minShare` of every
 * message in the order topics. A replay reads all of them, so with less of the log to catch up the
 * live projector gets there first.
 */
import { backoffDelay, type Backoff } from '../backoff.js';
import { historyGaps, type AcceptedLoss } from '../kafka/history.js';
import type { PartitionEnds } from '../kafka/port.js';
import type { RebuildProgress } from '../projector/rebuild-progress.js';
import type { ReplayThread } from '../projector/replay-thread.js';

export interface CatchUpOptions {
  /** the least lag, in messages, caught up by replay; null: never */
  minLag: number | null;
  /** the least share of the order topics' messages that the lag must be, 0 – 1 */
  minShare: number;
  /** starts a replay in a thread of its own */
  start: (onProgress: (progress: RebuildProgress) => void) => ReplayThread;
  /** the wait after a failed replay before the next, doubling with each failure in a row (default 1 to 10 min) */
  retry?: Backoff;
}

export const defaultReplayRetry: Backoff = { initialMs: 60_000, maxMs: 600_000 };

/** Messages in the topics' logs now, from their start to their end. */
export function logSizeOf(ends: readonly PartitionEnds[]): number {
  return ends.reduce((sum, end) => sum + Math.max(0, end.end - end.start), 0);
}

/**
 * Whether a replay from the start of each partition's log may run: the rule every build meets before
 * its first fetch (`historyGaps`, `kafka/history.ts`), for a model that has read nothing. Asked
 * before the served projector is stopped for a replay that would be refused.
 */
export function replayLosesNothing(
  ends: readonly PartitionEnds[],
  accepted: readonly AcceptedLoss[],
): boolean {
  return historyGaps(ends, () => undefined, accepted).length === 0;
}

/** Whether a lag of `lag` messages out of `logSize` is caught up faster by a replay than live. */
export function replayPays(
  lag: number,
  logSize: number,
  options: Pick<CatchUpOptions, 'minLag' | 'minShare'>,
): boolean {
  return options.minLag !== null && lag > 0 && lag >= options.minLag && lag >= options.minShare * logSize;
}

/** A replay under way, for the served model it was started for. */
export interface RunningReplay<Served> {
  thread: ReplayThread;
  served: Served;
  /** when its count of messages done last moved */
  movedAt: number;
  done: number;
  total: number | null;
}

/**
 * When to start a replay, and its watchdog: one at a time; none for `retry` after a failure; one
 * whose progress has not moved for the stall timeout is aborted (its end is reported as a failure).
 */
export class ReplayWatch<Served> {
  private running: RunningReplay<Served> | null = null;
  private failures = 0;
  private notBefore = 0;

  constructor(
    private readonly options: CatchUpOptions,
    private readonly watch: {
      stallTimeoutMs: number;
      now: () => number;
      onProgress?: (progress: RebuildProgress) => void;
    },
  ) {}

  active(): RunningReplay<Served> | null {
    return this.running;
  }

  /** Starts a replay for `served` when none runs, none failed lately, and it pays; returns it, or null. */
  maybeStart(served: Served, lag: number, logSize: number, now: number): RunningReplay<Served> | null {
    if (this.running !== null || now < this.notBefore) return null;
    if (!replayPays(lag, logSize, this.options)) return null;
    const replay: RunningReplay<Served> = {
      served,
      movedAt: now,
      done: 0,
      total: null,
      thread: this.options.start((progress) => {
        if (progress.done !== replay.done) replay.movedAt = this.watch.now();
        replay.done = progress.done;
        replay.total = progress.total;
        this.watch.onProgress?.(progress);
      }),
    };
    this.running = replay;
    return replay;
  }

  /**
   * True when the running replay has not moved for the stall timeout: it is being aborted. Once it
   * has read every message it only builds its indexes and joins its parts, with no broker to wait
   * for and no progress to report: that is never a stall.
   */
  abortIfStalled(now: number): boolean {
    const replay = this.running;
    if (replay === null || now - replay.movedAt <= this.watch.stallTimeoutMs) return false;
    if (replay.total !== null && replay.done >= replay.total) return false;
    replay.movedAt = now; // one abort per stall
    void replay.thread.abort();
    return true;
  }

  /** Records the end of `replay`: a failure holds the next one back, doubling in a row. */
  ended(replay: RunningReplay<Served>, failed: boolean, now: number): number {
    if (this.running === replay) this.running = null;
    if (!failed) {
      this.failures = 0;
      return 0;
    }
    const retry = this.options.retry ?? defaultReplayRetry;
    const delay = backoffDelay(retry, this.failures);
    this.failures += 1;
    this.notBefore = now + delay;
    return delay;
  }
}

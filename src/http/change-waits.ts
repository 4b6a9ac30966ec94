/**
 * Waiting requests: a conditional GET with `Prefer: wait=N` (RFC 7240 §4.3) whose tag is still
 * current is held until the answer's tag changes (then 200 with the new answer) or N seconds pass
 * (then 304), at most `WAIT_MAX_SECONDS`. A held request costs no CPU while nothing changes: one
 * watcher per request thread sleeps on the model's commit epochs (`reader-caches.ts`, moved and
 * notified after every commit, in shared memory) and looks again at every held request when they
 * move. Bounds per API key and in total hold across request threads (`wait-counts.ts`, in shared
 * memory); a request beyond them is answered at once, as if it had not asked, without
 * `Preference-Applied`.
 * Closing the app answers every held request at once (304, or 200 if its answer changed).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WaitSettings } from '../config.js';
import { newWaitTable, WaitCounts } from './wait-counts.js';

export type { WaitSettings };

export const defaultWaitSettings: WaitSettings = { maxSeconds: 60, perKey: 10, total: 1000 };

/** The longest `Prefer` header read: a preference list longer than this is not one a client means. */
const maxPreferLength = 1024;

/**
 * The seconds a request asks to wait (`Prefer: wait=N`, among other preferences, in one header or
 * several), or null when it asks none or the value is not a decimal number of seconds.
 */
export function preferredWait(header: string | string[] | undefined): number | null {
  if (header === undefined) return null;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.length > maxPreferLength) return null;
  for (const preference of text.split(',')) {
    const match = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*(;.*)?$/i.exec(preference);
    if (match?.[1] !== undefined) return Number(match[1]);
  }
  return null;
}

/** The served model's commit epochs and the count they showed (`ChangeWaits.mark`). */
export interface EpochMark {
  readonly epochs: Int32Array | null;
  readonly seen: number;
}

/** What one held request does when it is looked at again: true once it has answered. */
export type Recheck = (final: boolean) => boolean;

interface Held {
  recheck: Recheck;
  timer: NodeJS.Timeout;
  release: () => void;
}

/** How often the watcher also looks whether the served model's epochs were replaced (a new file). */
const switchCheckMs = 1000;

export class ChangeWaits {
  private readonly held = new Set<Held>();
  /** the counts every thread shares, used from this thread's region */
  private readonly counts: WaitCounts;
  private watching = false;
  private closed = false;

  constructor(
    readonly settings: WaitSettings,
    /** the commit epochs of the model answering now (null: one that is never written) */
    private readonly epochsOf: () => Int32Array | null,
    table: SharedArrayBuffer = newWaitTable(),
    /** this thread's region of `table` */
    region = 0,
  ) {
    this.counts = new WaitCounts(table, region);
  }

  /** Held requests of this thread now (metrics, tests). */
  get size(): number {
    return this.held.size;
  }

  /** The seconds this request will be held, or null when it is not (none asked, off, or a bound reached). */
  applicable(request: FastifyRequest): number | null {
    if (this.closed || this.settings.maxSeconds <= 0 || request.headers['if-none-match'] === undefined) {
      return null;
    }
    const asked = preferredWait(request.headers.prefer);
    if (asked === null || asked <= 0) return null;
    return Math.min(asked, this.settings.maxSeconds);
  }

  /**
   * Where the served model's commits are now: taken before a request reads its answer, and given to
   * `hold`, so that a commit after that read is noticed even if no watcher was awake to see it.
   */
  mark(): EpochMark {
    const epochs = this.currentEpochs();
    return { epochs, seen: epochs === null ? 0 : Atomics.load(epochs, 0) };
  }

  /**
   * Holds a request whose answer has not changed, until `recheck(false)` answers it (called after
   * each commit after `since`, the mark taken before its answer was read), or `seconds` pass or the
   * app closes (then `recheck(true)`, which must answer). False when a bound is reached: nothing is
   * held, the caller answers at once.
   */
  hold(
    request: FastifyRequest,
    reply: FastifyReply,
    seconds: number,
    recheck: Recheck,
    since: EpochMark,
  ): boolean {
    // Closed while the request waited for its position, or its caller already gone: held by nobody.
    if (this.closed || request.raw.destroyed || reply.raw.destroyed) return false;
    const slot = this.counts.take(request.caller.keySha256, this.settings.perKey, this.settings.total);
    if (slot === null) return false;
    let released = false;
    const entry: Held = {
      recheck,
      timer: setTimeout(() => this.answer(entry, true), seconds * 1000),
      release: () => {
        if (released) return;
        released = true;
        clearTimeout(entry.timer);
        this.held.delete(entry);
        this.counts.release(slot);
      },
    };
    this.held.add(entry);
    // A caller that goes away is forgotten at once; an answered request ends the same way.
    reply.raw.once('close', entry.release);
    this.watch();
    // A commit since its answer was read, before the watcher looked: read again now.
    if (this.moved(since)) queueMicrotask(() => this.answer(entry, false));
    return true;
  }

  /** Answers every held request now, and holds none from here on (the app is closing). */
  close(): void {
    this.closed = true;
    for (const entry of [...this.held]) this.answer(entry, true);
  }

  private answer(entry: Held, final: boolean): void {
    if (!this.held.has(entry)) return;
    let done = true;
    try {
      done = entry.recheck(final) || final;
    } finally {
      if (done) entry.release();
    }
  }

  /** The served model's epochs; null also when they cannot be had now (a model being switched): looked at again within a second. */
  private currentEpochs(): Int32Array | null {
    try {
      return this.epochsOf();
    } catch {
      return null;
    }
  }

  private moved(since: EpochMark): boolean {
    const now = this.mark();
    return now.epochs !== since.epochs || now.seen !== since.seen;
  }

  /** One watcher per thread, while anything is held: it sleeps until a commit, never polls the file. */
  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    void (async () => {
      try {
        while (this.held.size > 0) {
          const { epochs, seen } = this.mark();
          if (epochs === null) {
            await new Promise((resolve) => setTimeout(resolve, switchCheckMs));
          } else {
            const waiting = Atomics.waitAsync(epochs, 0, seen, switchCheckMs);
            if (waiting.async) await waiting.value;
          }
          if (this.held.size === 0) break;
          if (this.moved({ epochs, seen })) {
            for (const entry of [...this.held]) this.answer(entry, false);
          }
        }
      } finally {
        this.watching = false;
      }
    })();
  }
}

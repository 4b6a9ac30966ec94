/**
 * Requests per API key (by its SHA-256) and fixed time window. Every answer to an authenticated
 * caller states its budget with GitHub's headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
 * `X-RateLimit-Reset` (epoch seconds when the window ends) and, on the 429, `Retry-After`
 * (seconds). A 304 is not counted: a poller revalidating an unchanged page spends nothing.
 *
 * @fastify/rate-limit counts and answers the 429; its own headers are off because it sends the
 * seconds left as `X-RateLimit-Reset` and cannot give a count back. The windows are kept here
 * (its `store` option) so that a 304 can return its request and the headers read the same count.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';

export interface RateLimit {
  max: number;
  windowMs: number;
}

interface Window {
  /** requests counted in this window, those answered 429 included */
  count: number;
  startedAtMs: number;
  endsAtMs: number;
}

/** The windows of every key seen in the last window; expired ones are dropped once per window. */
export class RateWindows {
  private readonly windows = new Map<string, Window>();
  private nextSweepMs = 0;

  constructor(
    readonly limit: RateLimit,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `key`; the window it was counted in. */
  take(key: string): Window {
    const now = this.now();
    this.sweep(now);
    let window = this.current(key, now);
    if (window === undefined) {
      window = { count: 0, startedAtMs: now, endsAtMs: now + this.limit.windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
    return window;
  }

  /** Gives back a request of `key` counted at `countedAtMs`, unless its window has ended since. */
  giveBack(key: string, countedAtMs: number): void {
    const window = this.current(key, this.now());
    if (window !== undefined && window.startedAtMs <= countedAtMs && window.count > 0) window.count -= 1;
  }

  /** The budget headers of `key` as they stand (a key with no current window has its whole budget). */
  headers(key: string, limited: boolean): Record<string, string> {
    const now = this.now();
    const window = this.current(key, now);
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

  private current(key: string, now: number): Window | undefined {
    const window = this.windows.get(key);
    return window !== undefined && window.endsAtMs > now ? window : undefined;
  }

  private sweep(now: number): void {
    if (now < this.nextSweepMs) return;
    for (const [key, window] of this.windows) if (window.endsAtMs <= now) this.windows.delete(key);
    this.nextSweepMs = now + this.limit.windowMs;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** when this request was counted against its key's budget (not counted: undefined) */
    rateCountedAtMs?: number;
  }
}

const noHeaders = {
  'x-ratelimit-limit': false,
  'x-ratelimit-remaining': false,
  'x-ratelimit-reset': false,
  'retry-after': false,
} as const;

/** Limits a scope's requests; absent or max 0: no limit. */
export async function rateLimiting(scope: FastifyInstance, limit: RateLimit | undefined): Promise<void> {
  if (limit === undefined || limit.max <= 0) return;
  const windows = new RateWindows(limit);
  // What @fastify/rate-limit asks of a store: `incr` answers the count and the time left.
  class WindowStore {
    incr(key: string, done: (error: Error | null, result: { current: number; ttl: number }) => void): void {
      const window = windows.take(key);
      done(null, { current: window.count, ttl: window.endsAtMs - Date.now() });
    }
    child(): this {
      return this;
    }
  }
  await scope.register(rateLimit, {
    hook: 'preHandler',
    max: limit.max,
    timeWindow: limit.windowMs,
    store: WindowStore,
    addHeaders: noHeaders,
    addHeadersOnExceeding: noHeaders,
    // asked once per request, just before the count (a 422 fails validation first and is not counted)
    keyGenerator: (request) => {
      request.rateCountedAtMs = Date.now();
      return request.keySha256;
    },
    errorResponseBuilder: (_request, context) =>
      new ApiError(
        429,
        'Too Many Requests',
        `At most ${context.max} requests per ${context.after} for one API key; retry after the time in Retry-After.`,
      ),
  });
  scope.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    // a 401 is answered before the key is known: no budget to state
    const key = request.keySha256 as string | undefined;
    if (key !== undefined) {
      if (reply.statusCode === 304 && request.rateCountedAtMs !== undefined)
        windows.giveBack(key, request.rateCountedAtMs);
      void reply.headers(windows.headers(key, reply.statusCode === 429));
    }
    done(null, payload);
  });
}

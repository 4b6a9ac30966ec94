/**
 * Requests per API key (by its SHA-256) and fixed time window. Every answer to an authenticated
 * caller states its budget with GitHub's headers: `X-RateLimit-Limit`, `X-RateLimit-Remaining`,
 * `X-RateLimit-Reset` (epoch seconds when the window ends) and, on the 429, `Retry-After`
 * (seconds). A 304 is not counted: a poller revalidating an unchanged page spends nothing.
 *
 * @fastify/rate-limit counts and answers the 429; its own headers are off because it sends the
 * seconds left as `X-RateLimit-Reset` and cannot give a count back. The windows are kept apart
 * (its `store` option; `rate-windows.ts`, in memory every request thread shares) so that a 304 can
 * return its request and the headers read the same count.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../api-error.js';
import type { Caller } from '../caller.js';
import { RateWindows, type RateLimit } from '../rate-windows.js';

export type { RateLimit };

declare module 'fastify' {
  interface FastifyRequest {
    /** when this request was counted against its key's budget (not counted: undefined) */
    rateCountedAtMs?: number;
  }
}

/** A window's length as the 429 names it: `60 seconds`, `1 second`, `1500 milliseconds`. */
export function windowText(windowMs: number): string {
  const [count, unit] = windowMs % 1000 === 0 ? [windowMs / 1000, 'second'] : [windowMs, 'millisecond'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

const noHeaders = {
  'x-ratelimit-limit': false,
  'x-ratelimit-remaining': false,
  'x-ratelimit-reset': false,
  'retry-after': false,
} as const;

/** Limits a scope's requests; absent or max 0: no limit. */
export async function rateLimiting(
  scope: FastifyInstance,
  limit: RateLimit | undefined,
  /** the windows shared by every request thread (`newRateTable`); absent: this thread's own */
  table?: SharedArrayBuffer,
): Promise<void> {
  if (limit === undefined || limit.max <= 0) return;
  const windows = new RateWindows(limit, Date.now, table);
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
    // asked once per request, just before the count (a 422 or 400 `Invalid cursor` fails validation first and is not counted)
    keyGenerator: (request) => {
      request.rateCountedAtMs = Date.now();
      return request.caller.keySha256;
    },
    // the window itself, not the time left of it (which @fastify/rate-limit's `context.after` gives)
    errorResponseBuilder: () =>
      new ApiError(
        429,
        'Too Many Requests',
        `At most ${limit.max} requests per ${windowText(limit.windowMs)} for one API key; retry after the time in Retry-After.`,
      ),
  });
  scope.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    // a 401 is answered before the key is known: no budget to state
    const key = (request.caller as Caller | undefined)?.keySha256;
    if (key !== undefined) {
      if (reply.statusCode === 304 && request.rateCountedAtMs !== undefined)
        windows.giveBack(key, request.rateCountedAtMs);
      void reply.headers(windows.headers(key, reply.statusCode === 429));
    }
    done(null, payload);
  });
}

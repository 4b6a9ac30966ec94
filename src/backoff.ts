/**
 * The one exponential backoff of the service: the projectors' supervisor, the request threads'
 * restarts and the retries of an unreadable partition each call it with delays of their own.
 */

/** Delays that double from `initialMs` with each failure in a row, never above `maxMs`. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

/** The delay before attempt `n` (0-based) after a failure: doubling from `initialMs`, capped at `maxMs`. */
export function backoffDelay(backoff: Backoff, attempt: number): number {
  // A bounded exponent keeps the product finite: 0 × 2 ** 1024 would be NaN, not 0.
  return Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 30));
}

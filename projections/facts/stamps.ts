/**
 * Fact stamps read from events and rows: the instant an RFC 3339 timestamp names, the stamp of
 * an event's fact, and, for rows that keep one stamp (articles, API keys), the row a fact makes
 * when it supersedes the stored one.
 */
import type { DomainEvent } from '../../schemas/events.js';
import { supersedes, type FactStamp } from './fact-stamp.js';

export function toEpochMs(rfc3339: string): number {
  return Date.parse(rfc3339);
}

/**
 * An RFC 3339 timestamp at the precision given, up to nanoseconds: epoch milliseconds (of its
 * first three fractional digits, as `Date.parse` reads them) and the nanoseconds after them.
 */
export function instantOf(rfc3339: string): { ms: number; sub: number } {
  // The fourth to ninth fractional digits, read in place (no regular expression, no substring: this
  // runs on every event), zeros where the fraction is shorter.
  let sub = 0;
  let digits = 0;
  const dot = rfc3339.indexOf('.');
  if (dot >= 0) {
    for (; digits < 9; digits++) {
      const digit = rfc3339.charCodeAt(dot + 1 + digits) - 48;
      if (!(digit >= 0 && digit <= 9)) break;
      if (digits >= 3) sub = sub * 10 + digit;
    }
  }
  for (let place = Math.max(digits, 3); place < 9; place++) sub *= 10;
  return { ms: Date.parse(rfc3339), sub };
}

export function stampOf(event: DomainEvent, rank: 0 | 1 = 0): FactStamp {
  const { ms, sub } = instantOf(event.occurred_at);
  return { at: ms, sub, rank, id: event.event_id };
}

export function storedStamp(
  at: number | null,
  sub: number | null,
  id: string | null,
  rank: 0 | 1 = 0,
): FactStamp | null {
  return at === null || id === null ? null : { at, sub: sub ?? 0, rank, id };
}

/** Articles and API keys keep one stamp per row: the latest fact about the entity. */
export type StampedRow = { v_at: number; v_sub: number; v_rank: 0 | 1; v_id: string };

/** The row a fact makes when it supersedes the current one, else null. Removals have rank 1. */
export function newerRow<R extends StampedRow>(
  event: DomainEvent,
  rank: 0 | 1,
  current: R | undefined,
  fields: Omit<R, keyof StampedRow>,
): R | null {
  const v = stampOf(event, rank);
  const stored =
    current === undefined
      ? null
      : { at: current.v_at, sub: current.v_sub, rank: current.v_rank, id: current.v_id };
  if (!supersedes(v, stored)) return null;
  // Omit<R, …> plus the stamp columns is R; TypeScript cannot see that through the generic spread.
  return { ...fields, v_at: v.at, v_sub: v.sub, v_rank: rank, v_id: v.id } as R;
}

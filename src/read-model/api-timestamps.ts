/** Timestamps as the API gives them: `YYYY-MM-DD HH:MM:SS` in UTC. */
import { DAY_MS } from '../../projections/orders/listing.js';

const twoDigits = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
/** `YYYY-MM-DD ` of each UTC day met so far; a few hundred per year of data. */
const dayPrefixes = new Map<number, string>();
const maxCachedDays = 100_000;
/** Years 0000–9999, the range of RFC 3339 timestamps. */
const fastRange = {
  from: Date.parse('0000-01-01T00:00:00Z'),
  to: Date.parse('9999-12-31T23:59:59.999Z') + 1,
};

function isoTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * `YYYY-MM-DD HH:MM:SS` in UTC. A page of 50 orders formats 100 of these, so the date part is
 * computed once per day and the time of day with integer arithmetic.
 */
export function formatApiTimestamp(epochMs: number): string {
  if (!(epochMs >= fastRange.from && epochMs < fastRange.to)) return isoTimestamp(epochMs);
  const day = Math.floor(epochMs / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= maxCachedDays) dayPrefixes.clear();
    prefix = isoTimestamp(day * DAY_MS).slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  const seconds = Math.floor((epochMs - day * DAY_MS) / 1000);
  return `${prefix}${twoDigits[Math.floor(seconds / 3600)]}:${twoDigits[Math.floor(seconds / 60) % 60]}:${twoDigits[seconds % 60]}`;
}

/**
 * The two readings of an event's timestamp that run on every event, each pinned to the plain rule
 * it shortens: the years check parses only the years 0000 and 9999, and `instantOf` reads the
 * fraction's digits in place.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { instantOf } from '../../projections/facts/stamps.js';
import { z } from 'zod';
import { OrderCreatedData } from '../../schemas/events.js';

const timestamp = OrderCreatedData.shape.created_at;

const twoDigits = (n: number): string => String(n).padStart(2, '0');

/** RFC 3339 timestamps of every shape the contract accepts, the years at the range's edges often. */
const rfc3339 = fc
  .record({
    year: fc.oneof(fc.constantFrom(0, 1, 9998, 9999), fc.integer({ min: 0, max: 9999 })),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.option(fc.stringMatching(/^\d{1,12}$/), { nil: undefined }),
    offset: fc.oneof(
      fc.constant('Z'),
      fc
        .record({
          sign: fc.constantFrom('+', '-'),
          hours: fc.integer({ min: 0, max: 23 }),
          minutes: fc.integer({ min: 0, max: 59 }),
        })
        .map(({ sign, hours, minutes }) => `${sign}${twoDigits(hours)}:${twoDigits(minutes)}`),
    ),
  })
  .map(
    (t) =>
      `${String(t.year).padStart(4, '0')}-${twoDigits(t.month)}-${twoDigits(t.day)}T${twoDigits(t.hour)}:` +
      `${twoDigits(t.minute)}:${twoDigits(t.second)}${t.fraction === undefined ? '' : `.${t.fraction}`}${t.offset}`,
  );

const yearZero = -62_167_219_200_000; // 0000-01-01T00:00:00Z
const yearTenThousand = 253_402_300_800_000; // 10000-01-01T00:00:00Z

/** The rule in full: the instant, once converted to UTC, within the years 0000–9999. */
function withinYears(value: string): boolean {
  const ms = Date.parse(value);
  return ms >= yearZero && ms < yearTenThousand;
}

/** The schema as it was before the shortcut: the format, then a parse of every string for the years. */
const plainTimestamp = z.iso
  .datetime({ offset: true })
  .refine(withinYears, { message: 'must fall within the years 0000–9999 once converted to UTC' });

/** Strings near the format and far from it: timestamps with a character changed, cut or added. */
const nearTimestamps = fc.oneof(
  fc.string(),
  fc
    .tuple(rfc3339, fc.nat(), fc.constantFrom('', 'x', '9', '0', '+', '-', ':', '.', 'T', 'Z', ' '))
    .map(([value, at, char]) => {
      const i = at % (value.length + 1);
      return value.slice(0, i) + char + value.slice(i + (char === '' ? 1 : at % 2));
    }),
);

/** The fraction's fourth to ninth digits as a number, zeros where it is shorter (the plain reading). */
function subMillisecond(value: string): number {
  const fraction = /\.(\d+)/.exec(value)?.[1] ?? '';
  return Number(fraction.slice(3, 9).padEnd(6, '0'));
}

describe('timestamps read on every event', () => {
  it('the years check decides as a parse of every timestamp would', () => {
    fc.assert(
      fc.property(rfc3339, (value) => {
        expect(timestamp.safeParse(value).success).toBe(withinYears(value));
      }),
      { numRuns: 2000 },
    );
    // Every string, in the format or not, gets the same issues as under the plain rule (the
    // years rule also runs on the format's rejects, and its issue is part of a dead letter's detail).
    fc.assert(
      fc.property(fc.oneof(rfc3339, nearTimestamps), (value) => {
        expect(timestamp.safeParse(value).error?.issues).toEqual(
          plainTimestamp.safeParse(value).error?.issues,
        );
      }),
      { numRuns: 5000 },
    );
    // the edges themselves, each side
    expect(timestamp.safeParse('0000-01-01T00:00:00Z').success).toBe(true);
    expect(timestamp.safeParse('0000-01-01T00:00:00+00:01').success).toBe(false);
    expect(timestamp.safeParse('9999-12-31T23:59:59.999Z').success).toBe(true);
    expect(timestamp.safeParse('9999-12-31T23:59:59-00:01').success).toBe(false);
  });

  it('instantOf reads the milliseconds and the nanoseconds after them as the plain reading does', () => {
    fc.assert(
      fc.property(rfc3339, (value) => {
        expect(instantOf(value)).toEqual({ ms: Date.parse(value), sub: subMillisecond(value) });
      }),
      { numRuns: 2000 },
    );
    expect(instantOf('2026-01-01T00:00:00.123456789987+05:30').sub).toBe(456789);
    expect(instantOf('2026-01-01T00:00:00.12+05:30').sub).toBe(0);
    expect(instantOf('2026-01-01T00:00:00.1234-05:30').sub).toBe(400000);
  });
});

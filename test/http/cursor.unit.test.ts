/** The cursor of GET /orders (`src/http/cursor.ts`): what it writes, and every text it refuses. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import { decodeCursor, encodeCursor, maxCursorLength, type PageCursor } from '../../src/http/cursor.js';

const cursorArbitrary: fc.Arbitrary<PageCursor> = fc.record({
  direction: fc.constantFrom('after' as const, 'before' as const),
  status: fc.constantFrom(...ORDER_STATUS_FILTERS),
  key: fc.record({
    createdAtMs: fc.maxSafeInteger(),
    createdAtSub: fc.integer({ min: 0, max: 999_999 }),
    orderId: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
  }),
});

const b64 = (text: string): string => Buffer.from(text).toString('base64url');

describe('page cursors', () => {
  it('decode to what was encoded, in base64url of at most 75 characters (property)', () => {
    fc.assert(
      fc.property(cursorArbitrary, (cursor) => {
        const text = encodeCursor(cursor);
        expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(text.length).toBeLessThanOrEqual(75);
        expect(decodeCursor(text)).toEqual(cursor);
      }),
      { numRuns: 2000 },
    );
    const longest: PageCursor = {
      direction: 'before',
      status: 'processing',
      key: { createdAtMs: -Number.MAX_SAFE_INTEGER, createdAtSub: 999_999, orderId: Number.MAX_SAFE_INTEGER },
    };
    expect(encodeCursor(longest)).toHaveLength(75);
    expect(decodeCursor(encodeCursor(longest))).toEqual(longest);
  });

  it('hold the status filter and the key of an order, nothing of an organization', () => {
    const cursor: PageCursor = {
      direction: 'after',
      status: 'finished',
      key: { createdAtMs: 1_793_523_900_000, createdAtSub: 42, orderId: 7 },
    };
    expect(Buffer.from(encodeCursor(cursor), 'base64url').toString()).toBe('1.a.finished.1793523900000.42.7');
  });

  it('refuse every text that is not exactly what the API writes', () => {
    const valid = '1.a.all.1793523900000.0.5';
    expect(decodeCursor(b64(valid))).not.toBeNull();
    for (const text of [
      '',
      '2.a.all.1793523900000.0.5', // another format
      '1.c.all.1793523900000.0.5', // neither after nor before
      '1.a.deleted.1793523900000.0.5', // no such status
      '1.a.all.01793523900000.0.5', // leading zero
      '1.a.all.-0.0.5', // negative zero
      '1.a.all.1793523900000.1000000.5', // beyond a millisecond's nanoseconds
      '1.a.all.1793523900000.00.5',
      '1.a.all.1793523900000.0.-5', // a negative id
      '1.a.all.1793523900000.0.9007199254740992', // beyond 2^53 − 1
      '1.a.all.99999999999999999.0.5',
      '1.a.all.1793523900000.0', // a part missing
      '1.a.all.1793523900000.0.5.6', // a part more
      `${valid} `,
      ` ${valid}`,
      `${valid}\n`,
      '1.a.all.1.5e3.0.5',
      '1.a.ALL.1793523900000.0.5',
    ]) {
      expect(decodeCursor(b64(text)), text).toBeNull();
    }
    for (const value of [
      '',
      `${b64(valid)}=`, // padding is not written
      `${b64(valid)}+`,
      b64(valid).replace(/.$/, '$&='),
      'not a cursor',
      '%00',
      '....',
      b64(valid).slice(0, -1), // cut
      `${b64(valid)}A`, // not canonical base64url
    ]) {
      expect(decodeCursor(value), value).toBeNull();
    }
  });

  it(`refuse a text past ${maxCursorLength} characters, before decoding it`, () => {
    expect(maxCursorLength).toBe(128);
    // a well-formed text padded with zeros of a timestamp would still be refused by its pattern;
    // these are valid base64url at and past the bound
    const atBound = 'A'.repeat(maxCursorLength);
    expect(decodeCursor(atBound)).toBeNull(); // decodes to no cursor
    expect(decodeCursor('A'.repeat(maxCursorLength + 1))).toBeNull();
    expect(decodeCursor(`${b64('1.a.all.0.0.5')}${'A'.repeat(maxCursorLength)}`)).toBeNull();
  });
});

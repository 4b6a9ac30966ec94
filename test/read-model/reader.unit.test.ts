import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatApiTimestamp, ReadModelReader } from '../../src/read-model/reader.js';
import { apiKeyIssued, orderCreated, orderDeleted, statusChanged, at } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';

const reference = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');

describe('formatApiTimestamp', () => {
  it('equals the ISO 8601 UTC date and time to the second for any instant of years 0000–9999', () => {
    const from = Date.parse('0000-01-01T00:00:00Z');
    const to = Date.parse('9999-12-31T23:59:59.999Z');
    fc.assert(
      fc.property(fc.integer({ min: from, max: to }), (ms) => {
        expect(formatApiTimestamp(ms)).toBe(reference(ms));
      }),
      { numRuns: 20_000 },
    );
    for (const ms of [
      from,
      to,
      -1,
      0,
      1,
      999,
      1000,
      -86_400_000,
      -86_400_001,
      Date.parse('2024-02-29T23:59:59.999Z'),
    ]) {
      expect(formatApiTimestamp(ms)).toBe(reference(ms));
    }
  });
});

/** Created-at instants over a few UTC days around the epoch and in 2026, with ties. */
const instants = [
  '1969-12-31T22:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00Z',
  '2026-03-01T00:00:00Z',
  '2026-03-01T23:59:59Z',
  '2026-03-02T00:00:00Z',
  '2026-03-02T12:00:00Z',
  '2026-03-05T08:00:00Z',
];

describe('ReadModelReader deep offsets', () => {
  it('a page found through the per-day counters equals the page found by stepping the index, at every offset', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            org: fc.constantFrom(1, 2),
            created: fc.constantFrom(...instants),
            status: fc.constantFrom('publishing', 'finished', 'draft'),
            later: fc.constantFrom('none', 'finished', 'deleted'),
          }),
          { maxLength: 40 },
        ),
        fc.constantFrom(null, 'finished' as const, 'processing' as const),
        fc.integer({ min: 1, max: 7 }),
        (orders, status, limit) => {
          const { db, apply } = memoryReadModel();
          orders.forEach((o, i) => {
            const id = i + 1;
            apply(
              orderCreated(
                { order_id: id, organization_id: o.org, status: o.status, created_at: o.created },
                { occurred_at: at(0) },
              ),
            );
            if (o.later === 'finished') apply(statusChanged(id, 'finished', { occurred_at: at(1) }));
            if (o.later === 'deleted') apply(orderDeleted(id, { occurred_at: at(1) }));
          });
          const stepping = new ReadModelReader(db, { deepOffsetFrom: Number.POSITIVE_INFINITY });
          const byDays = new ReadModelReader(db, { deepOffsetFrom: 0 });
          const listed = orders
            .map((o, i) => ({ ...o, id: i + 1, ms: Date.parse(o.created) }))
            .filter(
              (o) => o.org === 1 && o.later !== 'deleted' && !(o.status === 'draft' && o.later === 'none'),
            )
            .map((o) => ({
              ...o,
              final: o.later === 'finished' || o.status === 'finished' ? 'finished' : 'processing',
            }))
            .filter((o) => status === null || o.final === status)
            .sort((a, b) => b.ms - a.ms || b.id - a.id)
            .map((o) => o.id);
          for (let offset = 0; offset <= listed.length + 1; offset += 1) {
            const query = { orgId: 1, status, limit, offset };
            const expected = stepping.orderPage(query);
            expect(expected.orders.map((o) => o.id)).toEqual(listed.slice(offset, offset + limit));
            expect(expected.total).toBe(listed.length);
            expect(byDays.orderPage(query)).toEqual(expected);
          }
          db.close();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('on a file of projection version 1 (no per-day counters) deep pages are found by stepping the index', () => {
    const { db, apply } = memoryReadModel();
    instants.forEach((created, i) =>
      apply(orderCreated({ order_id: i + 1, created_at: created }, { occurred_at: at(0) })),
    );
    const current = new ReadModelReader(db, { deepOffsetFrom: 0 });
    const expected = [0, 3, 5, 7].map((offset) =>
      current.orderPage({ orgId: 1, status: null, limit: 2, offset }),
    );
    db.exec('DROP TABLE org_order_days');
    const onVersion1 = new ReadModelReader(db, { deepOffsetFrom: 0 });
    expect(
      [0, 3, 5, 7].map((offset) => onVersion1.orderPage({ orgId: 1, status: null, limit: 2, offset })),
    ).toEqual(expected);
    expect(expected.map((page) => page.orders.length)).toEqual([2, 2, 2, 1]);
  });
});

describe('remembered change counters', () => {
  it('serve a counter from memory until forgetChanges(), and never for longer than a second', async () => {
    const model = memoryReadModel();
    model.apply(apiKeyIssued('k', 1, 'a'.repeat(64)), orderCreated({ order_id: 1, organization_id: 1 }));
    const reader = new ReadModelReader(model.db, { cacheChanges: true });
    const before = reader.orgChanges(1);
    expect(before).toBeGreaterThan(0);
    model.apply(statusChanged(1, 'finished'));
    // Not yet told of the commit: the remembered value.
    expect(reader.orgChanges(1)).toBe(before);
    reader.forgetChanges();
    const after = reader.orgChanges(1);
    expect(after).toBeGreaterThan(before);
    model.apply(statusChanged(1, 'publishing', { occurred_at: '2026-12-01T00:00:00Z' }));
    expect(reader.orgChanges(1)).toBe(after);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(reader.orgChanges(1)).toBeGreaterThan(after);
    // Without caching, every read sees the file.
    const plain = new ReadModelReader(model.db);
    const seen = plain.orgChanges(1);
    model.apply(statusChanged(1, 'finished', { occurred_at: '2026-12-02T00:00:00Z' }));
    expect(plain.orgChanges(1)).toBeGreaterThan(seen);
    model.db.close();
  });
});

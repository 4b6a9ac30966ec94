import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { formatApiTimestamp } from '../../src/read-model/api-timestamps.js';
import { offsetKey, ReadModelReader, type Positions } from '../../src/read-model/reader.js';
import { apiKeyIssued, orderCreated, orderDeleted, statusChanged, at } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { ORDER_STATUSES } from '../../schemas/api.js';

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
        fc.constantFrom(null, ...ORDER_STATUSES),
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
});

describe('remembered digests and positions', () => {
  const dir = tempDir('reader-cache');

  it('are one snapshot of the file: kept until forgetChanges() or a page read of a newer state, and never older than the page', async () => {
    const file = join(dir, 'model.sqlite');
    const model = memoryReadModel(openOneFileModel(file));
    model.apply(apiKeyIssued('k', 1, 'a'.repeat(64)), orderCreated({ order_id: 1, organization_id: 1 }));
    const reader = new ReadModelReader(openReadModel(file, { readonly: true }), { cacheChanges: true });
    const read = (withPage = false): { digest: string; position: Positions; total?: number } =>
      reader.inReadTransaction((snapshot) => {
        const digest = snapshot.orgDigest(1);
        const total = withPage
          ? snapshot.orderPage({ orgId: 1, status: null, limit: 5, offset: 0 }).total
          : undefined;
        return { digest, position: snapshot.position(), ...(total === undefined ? {} : { total }) };
      });
    const before = read();
    expect(before.digest).not.toBe('0');
    expect(before.position.get(offsetKey(testTopics.orders, 0))).toBe(1);
    expect(read().position).toBe(before.position);
    model.apply(orderCreated({ order_id: 2, organization_id: 1 }));
    // Not yet told of the commit: the remembered snapshot, digest and position alike.
    expect(read()).toEqual(before);
    // A page reads the file: the position given with it is of the page's state.
    const paged = read(true);
    expect(paged.total).toBe(2);
    expect(paged.position.get(offsetKey(testTopics.orders, 0))).toBe(2);
    const after = read();
    expect(after.digest).not.toBe(before.digest);
    model.apply(statusChanged(1, 'finished'));
    reader.forgetChanges();
    expect(read().position.get(offsetKey(testTopics.orderStatus, 0))).toBe(1);
    // Never trusted for longer than a second without a report.
    model.apply(orderCreated({ order_id: 3, organization_id: 1 }));
    const unreported = read().digest;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(read().digest).not.toBe(unreported);
    // A change no answer shows (an internal status within processing) leaves the digest as it was.
    reader.forgetChanges();
    const withThree = read().digest;
    model.apply(statusChanged(3, 'publishing', { occurred_at: '2026-12-01T00:00:00Z' }));
    reader.forgetChanges();
    expect(read().digest).toBe(withThree);
    model.db.close();
    reader.db.close();
  });
});

import { describe, expect, it } from 'vitest';
import { decodeEvent } from '../../src/projector/decode.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { orderCreated, orderDeleted, statusChanged } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';

const second = '2026-11-21T10:15:00';

function listed(...events: Parameters<ReturnType<typeof memoryReadModel>['apply']>) {
  const model = memoryReadModel();
  model.apply(...events);
  return new ReadModelReader(model.db).orderPage({ orgId: 1, status: null, limit: 10, offset: 0 });
}

describe('timestamps at the precision given', () => {
  it('orders two status facts 300 µs apart by time, not by event id, in either delivery order', () => {
    const created = orderCreated({ order_id: 1, status: 'publishing' }, { occurred_at: `${second}Z` });
    const finished = statusChanged(1, 'finished', { event_id: 'a', occurred_at: `${second}.000400Z` });
    const publishing = statusChanged(1, 'publishing', { event_id: 'b', occurred_at: `${second}.000100Z` });
    for (const order of [
      [created, finished, publishing],
      [created, publishing, finished],
    ]) {
      expect(listed(...order).orders.map((o) => o.order_status)).toEqual(['finished']);
    }
  });

  it('compares down to the nanosecond and ignores digits beyond it', () => {
    const created = orderCreated({ order_id: 1, status: 'publishing' }, { occurred_at: `${second}Z` });
    const later = statusChanged(1, 'finished', { event_id: 'a', occurred_at: `${second}.000000002Z` });
    const earlier = statusChanged(1, 'publishing', { event_id: 'b', occurred_at: `${second}.0000000019Z` });
    expect(listed(created, later, earlier).orders[0]?.order_status).toBe('finished');
    // Equal to the nanosecond: the greater event id wins (rule 1).
    const tieA = statusChanged(1, 'finished', { event_id: 'a', occurred_at: `${second}.0000000019Z` });
    const tieB = statusChanged(1, 'publishing', { event_id: 'b', occurred_at: `${second}.0000000011Z` });
    expect(listed(created, tieB, tieA).orders[0]?.order_status).toBe('processing');
  });

  it('re-creates an order created 0.5 ms after its deletion, and keeps it deleted when created 0.5 ms before', () => {
    const deleted = orderDeleted(1, { event_id: 'z', occurred_at: `${second}.0010Z` });
    const after = orderCreated({ order_id: 1 }, { event_id: 'a', occurred_at: `${second}.0015Z` });
    const before = orderCreated({ order_id: 1 }, { event_id: 'a', occurred_at: `${second}.0005Z` });
    expect(listed(after, deleted).total).toBe(1);
    expect(listed(deleted, after).total).toBe(1);
    expect(listed(before, deleted).total).toBe(0);
    expect(listed(deleted, before).total).toBe(0);
  });

  it('lists orders created within one millisecond newest first by their full created_at, ties by id', () => {
    const page = listed(
      orderCreated({ order_id: 1, created_at: `${second}.000900Z` }),
      orderCreated({ order_id: 2, created_at: `${second}.000100Z` }),
      orderCreated({ order_id: 3, created_at: `${second}.000100Z` }),
      orderCreated({ order_id: 4, created_at: `${second}.0005Z` }),
    );
    expect(page.orders.map((o) => o.id)).toEqual([1, 4, 3, 2]);
  });
});

describe('timestamps outside the years 0000–9999 in UTC', () => {
  const decodeCreated = (created_at: string) =>
    decodeEvent('orders', Buffer.from(JSON.stringify(orderCreated({ order_id: 1, created_at }))));

  it('are invalid payloads with a detail that names the rule', () => {
    for (const created_at of ['0000-01-01T00:00:00+01:00', '9999-12-31T23:30:00-01:00']) {
      const decoded = decodeCreated(created_at);
      expect(decoded).toMatchObject({ ok: false, reason: 'invalid_payload' });
      expect(decoded.ok ? '' : decoded.detail).toMatch(/created_at.*years 0000–9999 once converted to UTC/);
    }
  });

  it('are accepted at the edges of the range and printed with four-digit years', () => {
    expect(decodeCreated('0000-01-01T00:00:00Z').ok).toBe(true);
    expect(decodeCreated('9999-12-31T23:59:59.999999999Z').ok).toBe(true);
    const page = listed(
      orderCreated({ order_id: 1, created_at: '0000-01-01T00:30:00+00:30' }),
      orderCreated({ order_id: 2, created_at: '9999-12-31T23:59:59.999999999Z' }),
    );
    expect(page.orders.map((o) => o.created_at)).toEqual(['9999-12-31 23:59:59', '0000-01-01 00:00:00']);
  });
});

import { DAY_MS } from '../../projections/orders/listing.js';
import { decodeBatch } from '../../src/projector/decode.js';
import { describe, expect, it } from 'vitest';
import { readSql } from '../../projections/orders/read-sql.js';
import { maxRowsPerStatement } from '../../projections/orders/sql.js';
import type { DomainEvent } from '../../schemas/events.js';
import type { RawMessage } from '../../src/kafka/port.js';
import { articlePublished, at, orderCreated, orderDeleted, statusChanged } from '../helpers/events.js';
import {
  dumpModel,
  memoryReadModel,
  recomputedDigests,
  recountedCounters,
  storedCounters,
  storedDigests,
  testTopics,
} from '../helpers/read-model.js';

describe('ReadModelWriter', () => {
  it('counts listed orders per organization and external status', () => {
    const { db, apply } = memoryReadModel();
    apply(
      orderCreated({ order_id: 1, organization_id: 1, status: 'publishing' }),
      orderCreated({ order_id: 2, organization_id: 1, status: 'publishing_ended' }),
      orderCreated({ order_id: 3, organization_id: 1, status: 'finished' }),
      orderCreated({ order_id: 4, organization_id: 2, status: 'draft' }),
    );
    expect(db.prepare('SELECT * FROM org_order_counts ORDER BY org_id, listed_status').all()).toEqual([
      { org_id: 1, listed_status: 'finished', orders: 1 },
      { org_id: 1, listed_status: 'processing', orders: 2 },
    ]);
  });

  it('moves an order between day counters when a newer creation fact changes its UTC day', () => {
    const { db, apply } = memoryReadModel();
    const day = (iso: string): number => Math.floor(Date.parse(iso) / DAY_MS);
    apply(orderCreated({ order_id: 1, created_at: '2026-03-01T23:59:59Z' }, { occurred_at: at(0) }));
    apply(orderCreated({ order_id: 1, created_at: '2026-03-02T00:00:00Z' }, { occurred_at: at(1) }));
    expect(storedCounters(db)).toEqual({
      org_order_counts: [{ org_id: 1, listed_status: 'processing', orders: 1 }],
      org_order_days: [
        { org_id: 1, day: day('2026-03-02T00:00:00Z'), listed_status: 'processing', orders: 1 },
      ],
    });
  });

  it('moves an order between counters when its status changes and drops it when deleted', () => {
    const { db, apply } = memoryReadModel();
    apply(
      orderCreated({ order_id: 1 }, { occurred_at: at(0) }),
      statusChanged(1, 'finished', { occurred_at: at(1) }),
    );
    const { created_at_ms } = db.prepare('SELECT created_at_ms FROM orders').get() as {
      created_at_ms: number;
    };
    expect(storedCounters(db)).toEqual({
      org_order_counts: [{ org_id: 1, listed_status: 'finished', orders: 1 }],
      org_order_days: [
        { org_id: 1, day: Math.floor(created_at_ms / DAY_MS), listed_status: 'finished', orders: 1 },
      ],
    });
    expect(storedCounters(db)).toEqual(recountedCounters(db));
    apply(orderDeleted(1, { occurred_at: at(2) }));
    expect(storedCounters(db)).toEqual({ org_order_counts: [], org_order_days: [] });
  });

  it('changes nothing, counts included, when the same events are applied twice (rule 4)', () => {
    const events = [
      orderCreated({ order_id: 1 }, { occurred_at: at(0) }),
      statusChanged(1, 'finished', { occurred_at: at(1) }),
      articlePublished({ article_id: 5, order_id: 1 }, { occurred_at: at(2) }),
    ];
    const once = memoryReadModel();
    once.apply(...events);
    const twice = memoryReadModel();
    twice.apply(...events, ...events);
    expect(dumpModel(twice.db)).toEqual(dumpModel(once.db));
  });

  it(`writes a batch's new orders, articles and change counters ${maxRowsPerStatement} rows a statement, every row once`, () => {
    // More new orders than one statement could bind (24 columns each, at most 32 766 parameters a
    // statement), and counts that fill whole statements and leave a remainder.
    const orders = Array.from({ length: 1400 }, (_, i) =>
      orderCreated({ order_id: i + 1, organization_id: (i % 3) + 1 }, { occurred_at: at(0) }),
    );
    const articles = Array.from({ length: 3 * maxRowsPerStatement + 4 }, (_, i) =>
      articlePublished({ article_id: i + 1, order_id: i + 1 }, { occurred_at: at(1) }),
    );
    const single = memoryReadModel();
    single.apply(...orders, ...articles);
    const batched = memoryReadModel();
    // one batch of orders, then one of articles
    batched.applyInBatches(orders.length + articles.length, [...orders, ...articles]);
    expect(dumpModel(batched.db)).toEqual(dumpModel(single.db));
    const count = (sql: string): unknown => batched.db.prepare(sql).get();
    expect(count('SELECT count(*) AS n FROM orders')).toEqual({ n: orders.length });
    expect(count('SELECT count(*) AS n FROM articles')).toEqual({ n: articles.length });
    expect(storedDigests(batched.db)).toEqual(recomputedDigests(batched.db));
    expect(storedDigests(batched.db).org_digests).toHaveLength(3);
  });

  it('applies a batch that failed half-way again as a whole, as a redelivery does, its digests included', () => {
    const message = (event: DomainEvent, offset: number): RawMessage => ({
      offset: String(offset),
      key: null,
      value: Buffer.from(JSON.stringify(event)),
    });
    const first = Array.from({ length: 10 }, (_, i) => message(orderCreated({ order_id: i + 1 }), i));
    // New orders to write many a statement, then a change to a stored order, which fails once below.
    const second = [
      ...Array.from({ length: 2 * maxRowsPerStatement + 8 }, (_, i) =>
        message(orderCreated({ order_id: 100 + i }), 10 + i),
      ),
      message(orderDeleted(1, { occurred_at: at(5) }), 10 + 2 * maxRowsPerStatement + 8),
    ];
    const expected = memoryReadModel();
    expected.writer.applyBatch(testTopics.orders, 0, decodeBatch('orders', first));
    expected.writer.applyBatch(testTopics.orders, 0, decodeBatch('orders', second));

    const { db, writer } = memoryReadModel();
    writer.applyBatch(testTopics.orders, 0, decodeBatch('orders', first));
    db.exec(`CREATE TABLE fail_writes (armed INTEGER NOT NULL);
      INSERT INTO fail_writes VALUES (1);
      CREATE TRIGGER fail_order_update BEFORE UPDATE ON orders WHEN (SELECT armed FROM fail_writes) = 1
      BEGIN SELECT RAISE(ABORT, 'injected write failure'); END;`);
    expect(() => writer.applyBatch(testTopics.orders, 0, decodeBatch('orders', second))).toThrow(
      'injected write failure',
    );
    expect(writer.storedOffset(testTopics.orders, 0)).toBe(first.length);
    db.exec('DROP TRIGGER fail_order_update; DROP TABLE fail_writes');
    expect(writer.applyBatch(testTopics.orders, 0, decodeBatch('orders', second))).toMatchObject({
      applied: second.length,
      nextOffset: first.length + second.length,
    });
    expect(dumpModel(db)).toEqual(dumpModel(expected.db));
    expect(storedDigests(db)).toEqual(recomputedDigests(db));
  });

  it('skips messages below the stored offset, so a redelivered batch is not applied again', () => {
    const { db, writer } = memoryReadModel();
    const value = Buffer.from(JSON.stringify(orderCreated({ order_id: 1 })));
    const batch = decodeBatch('orders', [{ offset: '0', key: null, value }]);
    const first = writer.applyBatch(testTopics.orders, 0, batch);
    const again = writer.applyBatch(testTopics.orders, 0, batch);
    expect(first).toMatchObject({ applied: 1, alreadyApplied: 0, nextOffset: 1 });
    expect(again).toMatchObject({ applied: 0, alreadyApplied: 1, nextOffset: null });
    expect(db.prepare('SELECT * FROM consumer_offsets').all()).toEqual([
      { topic: testTopics.orders, partition: 0, next_offset: 1 },
    ]);
  });

  it('records each invalid message as one dead letter with its reason and passes its offset', () => {
    const { db, apply } = memoryReadModel();
    const validEnvelope = { event_id: 'x', occurred_at: at(0) };
    apply(
      { role: 'orders', raw: Buffer.from([0xff, 0xfe, 0x7b]) },
      { role: 'orders', raw: '{"event_id": ' },
      { role: 'orders', raw: JSON.stringify({ type: 'order.created' }) },
      { role: 'orders', raw: JSON.stringify({ ...validEnvelope, type: 'order.archived', data: {} }) },
      { role: 'articles', raw: JSON.stringify(orderCreated({ order_id: 9 })) },
      {
        role: 'orders',
        raw: JSON.stringify({ ...validEnvelope, type: 'order.created', data: { order_id: -1 } }),
      },
      { role: 'orders', raw: '' },
    );
    const letters = db.prepare('SELECT topic, "offset", reason FROM dead_letters ORDER BY id').all();
    expect(letters).toEqual([
      { topic: 'orders', offset: 0, reason: 'invalid_utf8' },
      { topic: 'orders', offset: 1, reason: 'invalid_json' },
      { topic: 'orders', offset: 2, reason: 'invalid_envelope' },
      { topic: 'orders', offset: 3, reason: 'unknown_type' },
      { topic: 'articles', offset: 0, reason: 'wrong_topic' },
      { topic: 'orders', offset: 4, reason: 'invalid_payload' },
      { topic: 'orders', offset: 5, reason: 'empty_value' },
    ]);
    expect(db.prepare('SELECT topic, next_offset FROM consumer_offsets ORDER BY topic').all()).toEqual([
      { topic: 'articles', next_offset: 1 },
      { topic: 'orders', next_offset: 6 },
    ]);
  });

  it('accepts unknown extra fields anywhere in an event', () => {
    const { db, apply } = memoryReadModel();
    const event = orderCreated({ order_id: 1 });
    apply({
      role: 'orders',
      raw: JSON.stringify({ ...event, trace: 'x', data: { ...event.data, region: 'eu' } }),
    });
    expect(db.prepare('SELECT order_id, listed_status FROM orders').all()).toEqual([
      { order_id: 1, listed_status: 'processing' },
    ]);
  });
});

describe('read-model indexes', () => {
  const plan = (sql: string): string[] => {
    const { db } = memoryReadModel();
    return (
      db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({
        orgId: 1,
        status: 'finished',
        limit: 50,
        offset: 0,
        orderId: 1,
        day: 1,
        createdAtMs: 1,
        createdAtSub: 0,
      }) as {
        detail: string;
      }[]
    ).map((row) => row.detail);
  };

  it('find the day of a deep offset from the per-day counters in key order', () => {
    expect(plan(readSql.ordersPerDay)).toEqual(['SEARCH org_order_days USING PRIMARY KEY (org_id=?)']);
    expect(plan(readSql.ordersPerDayByStatus)).toEqual([
      'SEARCH org_order_days USING PRIMARY KEY (org_id=?)',
    ]);
  });

  it('serve the organization listing newest first with no sort step', () => {
    expect(plan(readSql.listOrders)).toEqual([
      'SEARCH orders USING COVERING INDEX orders_listed_by_org (org_id=?)',
    ]);
    expect(plan(readSql.listOrdersFromDay)).toEqual([
      'SEARCH orders USING COVERING INDEX orders_listed_by_org (org_id=? AND created_at_ms<?)',
    ]);
  });

  it('serve a cursor page by seeking the same covering index to its key, either way, with no sort step', () => {
    // as cheap as the first offset page: a seek instead of stepping over the newer orders
    const seek = (comparison: '<' | '>'): string[] => [
      `SEARCH orders USING COVERING INDEX orders_listed_by_org (org_id=? AND (created_at_ms,created_at_sub)${comparison}(?,?))`,
    ];
    expect(plan(readSql.listOrdersAfter)).toEqual(seek('<'));
    expect(plan(readSql.listOrdersByStatusAfter)).toEqual(seek('<'));
    expect(plan(readSql.listOrdersBefore)).toEqual(seek('>'));
    expect(plan(readSql.listOrdersByStatusBefore)).toEqual(seek('>'));
  });

  it('serve the status-filtered listing from the same covering index with no sort step', () => {
    expect(plan(readSql.listOrdersByStatus)).toEqual([
      'SEARCH orders USING COVERING INDEX orders_listed_by_org (org_id=?)',
    ]);
    expect(plan(readSql.listOrdersByStatusFromDay)).toEqual([
      'SEARCH orders USING COVERING INDEX orders_listed_by_org (org_id=? AND created_at_ms<?)',
    ]);
  });

  it('serve the article list of an order with no sort step', () => {
    expect(plan(readSql.articlesOfOrder)).toEqual([
      'SEARCH o USING INTEGER PRIMARY KEY (rowid=?)',
      'SEARCH a USING COVERING INDEX articles_of_order (order_id=?) LEFT-JOIN',
    ]);
  });
});

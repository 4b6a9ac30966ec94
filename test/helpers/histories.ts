/** fast-check arbitraries of event histories and their delivery orders. */
import fc from 'fast-check';
import type { DomainEvent } from '../../schemas/events.js';
import {
  apiKeyIssued,
  apiKeyRevoked,
  articlePublished,
  articleRemoved,
  at,
  keyOf,
  orderCreated,
  orderDeleted,
  orderUpdated,
  roleOf,
  statusChanged,
} from './events.js';

const statuses = ['publishing', 'publishing_ended', 'finished', 'draft', 'pending', 'cancelled', 'archived'];

export interface HistoryShape {
  orgs: number;
  orders: number;
  articles: number;
  keys: number;
  maxEvents: number;
  minEvents?: number;
}

/**
 * Fractional digits after the milliseconds, as publishers on PostgreSQL (micro) or the JVM (nano) send
 * them: facts within one millisecond are ordered by them, not by event id.
 */
const subMillisecond = fc.constantFrom('', '0', '1', '100', '400', '400001', '999999', '9999999');

/** `…:SS.mmmZ` with more fractional digits after the milliseconds. */
function withFraction(iso: string, digits: string): string {
  return iso.replace(/Z$/, `${digits}Z`);
}

/**
 * A random history: facts about a few orders, articles and keys, with
 * occurred_at drawn from a narrow range so ties are common (down to the sub-millisecond), and event ids
 * unique but unordered so the tie-break is exercised.
 */
export function historyArbitrary(shape: HistoryShape): fc.Arbitrary<DomainEvent[]> {
  const orderId = fc.integer({ min: 1, max: shape.orders });
  const orgId = fc.integer({ min: 1, max: shape.orgs });
  const minute = fc.integer({ min: 0, max: 12 });
  const keyId = fc.integer({ min: 1, max: shape.keys }).map((k) => `key-${k}`);
  const fact = fc.oneof(
    fc.record({
      kind: fc.constant('created' as const),
      orderId,
      orgId,
      minute,
      status: fc.constantFrom(...statuses),
      scheduled: fc.option(minute),
    }),
    fc.record({
      kind: fc.constant('updated' as const),
      orderId,
      minute,
      title: fc.option(fc.string({ minLength: 1, maxLength: 8 })),
      scheduled: fc.oneof(fc.constantFrom('absent' as const, 'immediate' as const), minute),
    }),
    fc.record({ kind: fc.constant('deleted' as const), orderId, minute }),
    fc.record({
      kind: fc.constant('status' as const),
      orderId,
      minute,
      status: fc.constantFrom(...statuses),
    }),
    fc.record({
      kind: fc.constant('status' as const),
      orderId,
      minute,
      status: fc.constantFrom(...statuses),
    }),
    fc.record({
      kind: fc.constant('published' as const),
      articleId: fc.integer({ min: 1, max: shape.articles }),
      orderId,
      minute,
      host: fc.constantFrom('www.a.example', 'b.example'),
    }),
    fc.record({
      kind: fc.constant('removed' as const),
      articleId: fc.integer({ min: 1, max: shape.articles }),
      orderId,
      minute,
    }),
    fc.record({ kind: fc.constant('issued' as const), keyId, orgId, minute }),
    fc.record({ kind: fc.constant('revoked' as const), keyId, minute }),
  );
  return fc
    .array(fc.tuple(fact, fc.string({ minLength: 1, maxLength: 4 }), subMillisecond), {
      minLength: shape.minEvents ?? 1,
      maxLength: shape.maxEvents,
    })
    .map((facts) =>
      facts.map(([f, salt, sub], index): DomainEvent => {
        const m = { event_id: `${salt}-${index}`, occurred_at: withFraction(at(f.minute), sub) };
        switch (f.kind) {
          case 'created':
            return orderCreated(
              {
                order_id: f.orderId,
                organization_id: f.orgId,
                status: f.status,
                // spread over three UTC days, so re-created orders move between day counters
                created_at: withFraction(at(f.minute * 241), sub),
                distribution_date: f.scheduled === null ? null : at(f.scheduled + 30),
              },
              m,
            );
          case 'updated':
            return orderUpdated(
              {
                order_id: f.orderId,
                ...(f.title === null ? {} : { press_release_title: f.title }),
                ...(f.scheduled === 'absent'
                  ? {}
                  : { distribution_date: f.scheduled === 'immediate' ? null : at(f.scheduled + 30) }),
              },
              m,
            );
          case 'deleted':
            return orderDeleted(f.orderId, m);
          case 'status':
            return statusChanged(f.orderId, f.status, m);
          case 'published':
            return articlePublished(
              {
                article_id: f.articleId,
                order_id: f.orderId,
                article_url: `https://${f.host}/${f.articleId}/${salt}`,
              },
              m,
            );
          case 'removed':
            return articleRemoved(f.articleId, f.orderId, m);
          case 'issued':
            return apiKeyIssued(f.keyId, f.orgId, f.keyId.padEnd(64, '0').replace(/[^0-9a-f]/g, 'e'), m);
          case 'revoked':
            return apiKeyRevoked(f.keyId, m);
        }
      }),
    );
}

/** Per-topic-per-key streams: the order Kafka guarantees. */
export function streamsOf(history: readonly DomainEvent[]): DomainEvent[][] {
  const streams = new Map<string, DomainEvent[]>();
  for (const event of history) {
    const id = `${roleOf(event)}/${keyOf(event)}`;
    const stream = streams.get(id) ?? [];
    stream.push(event);
    streams.set(id, stream);
  }
  return [...streams.values()];
}

/**
 * A delivery of a history: streams interleaved at random (each stream keeps its
 * order) with redeliveries of already delivered events injected at random.
 */
export function deliveryArbitrary(history: readonly DomainEvent[]): fc.Arbitrary<DomainEvent[]> {
  const streams = streamsOf(history);
  const total = history.length;
  return fc
    .tuple(
      fc.array(fc.nat({ max: streams.length - 1 }), { minLength: total * 2, maxLength: total * 2 }),
      fc.array(fc.tuple(fc.nat(), fc.nat()), {
        minLength: Math.floor(total / 20),
        maxLength: Math.ceil(total / 2),
      }),
    )
    .map(([picks, duplicates]) => {
      const cursors = streams.map(() => 0);
      const delivered: DomainEvent[] = [];
      const take = (s: number): void => {
        const stream = streams[s]!;
        const cursor = cursors[s]!;
        if (cursor < stream.length) {
          delivered.push(stream[cursor]!);
          cursors[s] = cursor + 1;
        }
      };
      for (const pick of picks) take(pick);
      streams.forEach((stream, s) => {
        while (cursors[s]! < stream.length) take(s);
      });
      for (const [which, where] of duplicates) {
        const source = which % delivered.length;
        const position = source + 1 + (where % (delivered.length - source));
        delivered.splice(position, 0, delivered[source]!);
      }
      return delivered;
    });
}

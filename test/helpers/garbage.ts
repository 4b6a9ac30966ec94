import type { TopicRole } from '../../schemas/events.js';
import { at } from './events.js';

/** Messages that must each become exactly one dead letter, one of every kind. */
export function garbageMessages(count: number): { role: TopicRole; key: string; raw: Buffer }[] {
  const roles: TopicRole[] = ['orders', 'orderStatus', 'articles', 'apiKeys'];
  const kinds: ((i: number) => Buffer)[] = [
    (i) => Buffer.from([0xc3, 0x28, 0xa0, 0xa1, i % 256]),
    (i) => Buffer.from(`{"event_id": "broken-${i}"`),
    (i) => Buffer.from(JSON.stringify({ event_id: `no-type-${i}`, occurred_at: at(0), data: {} })),
    (i) =>
      Buffer.from(
        JSON.stringify({ event_id: `unknown-${i}`, type: 'order.archived', occurred_at: at(0), data: {} }),
      ),
    (i) =>
      Buffer.from(
        JSON.stringify({
          event_id: `bad-${i}`,
          type: 'order.status_changed',
          occurred_at: at(0),
          data: { order_id: 'x' },
        }),
      ),
    (i) =>
      Buffer.from(
        JSON.stringify({
          event_id: `big-${i}`,
          type: 'order.created',
          occurred_at: at(0),
          data: { order_id: 1, press_release_title: 'x'.repeat(5000) },
        }),
      ),
    (i) => Buffer.from(`[${i}]`),
  ];
  return Array.from({ length: count }, (_, i) => ({
    role: roles[i % roles.length]!,
    key: `garbage-${i}`,
    raw: kinds[i % kinds.length]!(i),
  }));
}

import { streamRoles, topicRoleOfType, type TopicRole } from '../../schemas/streams.js';
import { at } from './events.js';

const envelope = (i: number, type: string, data: unknown): Buffer =>
  Buffer.from(JSON.stringify({ event_id: `garbage-${i}`, type, occurred_at: at(0), data }));

/** Malformed messages, one kind after another; each must become exactly one dead letter. */
export const kinds: { reason: string; make: (i: number) => Buffer | null; type?: string }[] = [
  { reason: 'invalid_utf8', make: (i) => Buffer.from([0xc3, 0x28, 0xa0, 0xa1, i % 256]) },
  { reason: 'invalid_json', make: (i) => Buffer.from(`{"event_id": "broken-${i}"`) },
  {
    reason: 'invalid_envelope',
    make: (i) => Buffer.from(JSON.stringify({ event_id: `no-type-${i}`, occurred_at: at(0), data: {} })),
  },
  { reason: 'unknown_type', make: (i) => envelope(i, 'order.archived', {}) },
  {
    reason: 'invalid_payload',
    type: 'order.status_changed',
    make: (i) => envelope(i, 'order.status_changed', { order_id: 'x', status: 7 }),
  },
  {
    reason: 'invalid_payload',
    type: 'order.created',
    make: (i) => envelope(i, 'order.created', { order_id: 1 }),
  },
  {
    reason: 'invalid_payload',
    type: 'order.created',
    make: (i) =>
      envelope(i, 'order.created', {
        order_id: 1,
        organization_id: 1,
        member_id: 1,
        press_release_title: 'x'.repeat(50_000),
        status: 'finished',
        distribution_date: null,
        created_at: at(0),
      }),
  },
  { reason: 'invalid_envelope', make: (i) => Buffer.from(`[${i}]`) },
  { reason: 'empty_value', make: () => null },
];

/** Kinds are spread over the streams (schemas/streams.ts); `reason` is what the dead letter must say (wrong_topic aside). */
export function garbageMessages(
  count: number,
): { role: TopicRole; key: string; raw: Buffer | null; reason: string }[] {
  const roles = streamRoles;
  return Array.from({ length: count }, (_, i) => {
    const kind = kinds[i % kinds.length]!;
    // each round of the kinds starts one stream further on, so every kind meets every stream
    const role = roles[((i % kinds.length) + Math.floor(i / kinds.length)) % roles.length]!;
    const misplaced = kind.type !== undefined && topicRoleOfType.get(kind.type) !== role;
    return { role, key: `garbage-${i}`, raw: kind.make(i), reason: misplaced ? 'wrong_topic' : kind.reason };
  });
}

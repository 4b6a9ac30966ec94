/**
 * The one place where Kafka bytes become a typed event. Everything after it
 * sees a DomainEvent; everything that fails here becomes a dead letter.
 */
import { DomainEvent, EventEnvelope, topicRoles, type TopicRole } from '../../schemas/events.js';
import type { z } from 'zod';

export type DeadLetterReason =
  | 'empty_value'
  | 'invalid_utf8'
  | 'invalid_json'
  | 'invalid_envelope'
  | 'unknown_type'
  | 'wrong_topic'
  | 'invalid_payload';

export type Decoded =
  { ok: true; event: DomainEvent } | { ok: false; reason: DeadLetterReason; detail: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });
const knownTypes = new Set<string>(Object.values(topicRoles).flat());

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

export function decodeEvent(role: TopicRole, value: Buffer | null): Decoded {
  if (value === null || value.length === 0)
    return { ok: false, reason: 'empty_value', detail: 'message has no value' };
  let text: string;
  try {
    text = utf8.decode(value);
  } catch {
    return { ok: false, reason: 'invalid_utf8', detail: 'value is not valid UTF-8' };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: 'invalid_json', detail: error instanceof Error ? error.message : 'not JSON' };
  }
  const envelope = EventEnvelope.safeParse(json);
  if (!envelope.success)
    return { ok: false, reason: 'invalid_envelope', detail: describeIssues(envelope.error) };
  const type = envelope.data.type;
  if (!knownTypes.has(type))
    return { ok: false, reason: 'unknown_type', detail: `unknown event type "${type}"` };
  if (!(topicRoles[role] as readonly string[]).includes(type)) {
    return { ok: false, reason: 'wrong_topic', detail: `"${type}" does not belong on the ${role} topic` };
  }
  const event = DomainEvent.safeParse(json);
  if (!event.success) return { ok: false, reason: 'invalid_payload', detail: describeIssues(event.error) };
  return { ok: true, event: event.data };
}

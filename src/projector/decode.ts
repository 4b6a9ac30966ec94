/**
 * The one place where Kafka bytes become a typed event. Everything after it
 * sees a DomainEvent; everything that fails here becomes a dead letter.
 */
import { EventEnvelope, eventDataSchemas, type DomainEvent, type EventType } from '../../schemas/events.js';
import { topicRoleOfType, type TopicRole } from '../../schemas/streams.js';
import { z } from 'zod';
import type { RawMessage } from '../kafka/port.js';
import type { Decoded, DecodedMessage } from '../read-model/decoded.js';

/** One message's value beyond this is not decoded (MESSAGE_MAX_BYTES). */
export const defaultMessageMaxBytes = 1024 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

function describeIssues(error: z.ZodError, under: PropertyKey[] = []): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${[...under, ...issue.path].map(String).join('.') || '(root)'}: ${issue.message}`)
    .join('; ');
}

/** The edge of the Kafka port: a batch's bytes become typed events or dead letters, once. */
export function decodeBatch(
  role: TopicRole,
  messages: readonly RawMessage[],
  maxMessageBytes = defaultMessageMaxBytes,
): DecodedMessage[] {
  // Only the port's fields are kept (a client's message carries more; copying them all costs on every message).
  return messages.map((message) => ({
    offset: message.offset,
    key: message.key,
    value: message.value,
    decoded:
      message.value !== null && message.value.length > maxMessageBytes
        ? {
            ok: false,
            reason: 'too_large',
            detail: `the value is larger than MESSAGE_MAX_BYTES (${maxMessageBytes} bytes)`,
          }
        : decodeEvent(role, message.value),
  }));
}

/** The schemas a decoder checks a message against: the envelope, then the payload of its type. */
export interface EventSchemas {
  envelope: typeof EventEnvelope;
  data: typeof eventDataSchemas;
}

/**
 * The same schemas compiled by zod (`z.compile`): a generated parser runs first and hands anything
 * it does not accept to zod's own parser, so results and error texts are zod's, at a fraction of the
 * cost per event (test/projector/decode.property.unit.test.ts checks both agree).
 */
export const compiledEventSchemas: EventSchemas = {
  envelope: z.compile(EventEnvelope),
  data: Object.fromEntries(
    Object.entries(eventDataSchemas).map(([type, schema]) => [type, z.compile(schema)]),
  ) as unknown as typeof eventDataSchemas,
};

export function decodeEvent(role: TopicRole, value: Buffer | null): Decoded {
  return decodeEventWith(compiledEventSchemas, role, value);
}

export function decodeEventWith(schemas: EventSchemas, role: TopicRole, value: Buffer | null): Decoded {
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
  const envelope = schemas.envelope.safeParse(json);
  if (!envelope.success)
    return { ok: false, reason: 'invalid_envelope', detail: describeIssues(envelope.error) };
  const type = envelope.data.type;
  const owner = topicRoleOfType.get(type);
  if (owner === undefined)
    return { ok: false, reason: 'unknown_type', detail: `unknown event type "${type}"` };
  if (owner !== role) {
    return { ok: false, reason: 'wrong_topic', detail: `"${type}" does not belong on the ${role} topic` };
  }
  // The envelope is valid already: only the payload is left to check, against its type's schema.
  const data = schemas.data[type as EventType].safeParse(envelope.data.data);
  if (!data.success) {
    return { ok: false, reason: 'invalid_payload', detail: describeIssues(data.error, ['data']) };
  }
  // Type and data were checked together above; TypeScript cannot correlate them through the lookup.
  // The envelope is zod's own copy: its data is replaced in place rather than copied again.
  const event = envelope.data as { data: unknown };
  event.data = data.data;
  return { ok: true, event: event as DomainEvent };
}

/**
 * What the writer is given: messages as they left the Kafka port, each with what its bytes decoded
 * to (`projector/decode.ts` decodes them), and the reasons a message becomes a dead letter.
 */
import type { DomainEvent } from '../../schemas/events.js';
import type { RawMessage } from '../kafka/port.js';

export type DeadLetterReason =
  | 'empty_value'
  | 'invalid_utf8'
  | 'invalid_json'
  | 'invalid_envelope'
  | 'unknown_type'
  | 'wrong_topic'
  | 'invalid_payload'
  | 'too_large'
  /** not a message's fault: offsets an operator moved past (`skip-batch`) */
  | 'skipped_by_operator';

export type Decoded =
  { ok: true; event: DomainEvent } | { ok: false; reason: DeadLetterReason; detail: string };

/** A message as it left the Kafka port, with what its bytes decoded to. */
export interface DecodedMessage extends RawMessage {
  decoded: Decoded;
}

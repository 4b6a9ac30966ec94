/**
 * The dead letters the writer stores (`writeSql.insertDeadLetter`): what a message that decoded to
 * no event keeps of itself, and the record of a batch an operator skipped.
 */
import { createHash } from 'node:crypto';
import type { DeadLetterReason } from './decoded.js';
import type { RawMessage } from '../kafka/port.js';
import { skipDetail, type OperatorSkip } from './operator-skips.js';

const maxDetailLength = 500;
/** A dead letter keeps this much of the value (and key); its size and SHA-256 name the whole. */
export const deadLetterPreviewBytes = 1024;

/** One dead letter, as `writeSql.insertDeadLetter` takes it. */
export interface DeadLetter {
  topic: string;
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  reason: DeadLetterReason;
  detail: string;
  recordedAt: string;
}

/** The size and SHA-256 of a dead-lettered value, and how much of it is stored. */
function valueFacts(value: Buffer | null): string {
  if (value === null) return '';
  const sha = createHash('sha256').update(value).digest('hex');
  const kept = Math.min(value.length, deadLetterPreviewBytes);
  return ` [value: ${value.length} bytes, sha256 ${sha}${kept < value.length ? `, the first ${kept} stored` : ''}]`;
}

/** The dead letter of a message at `offset` that decoded to no event, for `reason` (`detail`). */
export function undecodedDeadLetter(
  topic: string,
  partition: number,
  offset: number,
  message: RawMessage,
  failure: { reason: DeadLetterReason; detail: string },
  recordedAt: string,
): DeadLetter {
  return {
    topic,
    partition,
    offset,
    key: message.key?.subarray(0, deadLetterPreviewBytes) ?? null,
    value: message.value?.subarray(0, deadLetterPreviewBytes) ?? null,
    reason: failure.reason,
    detail: `${failure.detail.slice(0, maxDetailLength)}${valueFacts(message.value)}`,
    recordedAt,
  };
}

/** The dead letter at a skipped batch's first offset saying what was skipped, by whom and why. */
export function operatorSkipDeadLetter(skip: OperatorSkip, recordedAt: string): DeadLetter {
  return {
    topic: skip.topic,
    partition: skip.partition,
    offset: skip.firstOffset,
    key: null,
    value: null,
    reason: 'skipped_by_operator',
    detail: skipDetail(skip).slice(0, maxDetailLength),
    recordedAt,
  };
}

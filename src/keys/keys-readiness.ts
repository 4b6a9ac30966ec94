/**
 * What the keys need for the replica to be ready, as a pure function: the keys consumer has proved
 * within `stallMs` that it reads every partition (a fetch came back), the keys topic is read to
 * within READY_MAX_LAG, and no partition of it is stopped at a batch that cannot be read. So a
 * replica that answers ready has seen every revocation the broker acknowledged up to a bound, after
 * a broker outage and after a restart alike.
 */
import type { UnreadableBatch } from '../kafka/port.js';
import { skipHint, totalLag, type LagMeasure } from '../supervision/lag.js';
import type { SupervisorStatus } from '../supervision/supervisor.js';

export interface KeysReadinessInput {
  now: number;
  /** when a fetch of the keys consumer last came back; null: never since the start */
  lastReadAt: number | null;
  consumer: SupervisorStatus | null;
  stallMs: number;
  lag: LagMeasure | null;
  readyMaxLag: number;
  unreadable: readonly (UnreadableBatch & { at: number })[];
}

export function keysReadiness(input: KeysReadinessInput): string[] {
  const reasons: string[] = [];
  const seconds = (ms: number): string => `${Math.max(0, Math.ceil(ms / 1000))} s`;
  const lastError = input.consumer?.lastError ?? null;
  const cause = lastError === null ? '' : ` (${lastError})`;
  if (input.lastReadAt === null) {
    reasons.push(`the keys consumer has not read the keys topic yet${cause}`);
  } else if (input.now - input.lastReadAt > input.stallMs) {
    reasons.push(
      `the keys consumer has not fetched for ${seconds(input.now - input.lastReadAt)}${cause}; revocations since are not seen`,
    );
  }
  // null exactly when the lag is not measured yet
  const lag = totalLag(input.lag);
  if (lag === null) reasons.push('keys lag not measured yet');
  else if (lag > input.readyMaxLag) {
    reasons.push(`keys lag ${lag} exceeds ${input.readyMaxLag}`);
  }
  for (const batch of input.unreadable) {
    reasons.push(
      `${batch.topic} partition ${batch.partition} cannot be read at offset ${batch.offset} (${batch.cause}); keys issued or revoked after it are not seen` +
        skipHint(batch),
    );
  }
  return reasons;
}

/**
 * Readiness as a pure function of the service's state, the served model's lag and the clock:
 * `/readyz` answers 200 only when the served model is of this code's projection version, its
 * projector runs, and it is measured within READY_MAX_LAG of the topics recently.
 */
import type { UnreadableBatch } from '../kafka/port.js';
import { skipHint, totalLag, type LagMeasure } from '../supervision/lag.js';
import type { ServiceState } from './states.js';
import type { SupervisorStatus } from '../supervision/supervisor.js';

export interface ReadinessInput {
  now: number;
  state: ServiceState;
  /** false while the served file is of an older projection version */
  servedIsCurrentVersion: boolean;
  projector: SupervisorStatus | null;
  lag: LagMeasure | null;
  /** when the served model's positions last moved while it lagged, or null when not lagging */
  stalledSince: number | null;
  readyMaxLag: number;
  stallTimeoutMs: number;
  /** partitions stopped at a batch the client cannot read, with when that was reported */
  unreadable?: readonly (UnreadableBatch & { at: number })[];
}

export interface Readiness {
  ready: boolean;
  reasons: string[];
}

export function readiness(input: ReadinessInput): Readiness {
  const reasons: string[] = [];
  const seconds = (ms: number): string => `${Math.max(0, Math.ceil(ms / 1000))} s`;
  if (input.state === 'stopping' || input.state === 'stopped') reasons.push('the service is shutting down');
  if (input.state === 'starting') reasons.push('the projector has not started yet');
  if (!input.servedIsCurrentVersion) {
    reasons.push('the served model is of an older projection version; a rebuild is running');
  }
  const projector = input.projector;
  if (projector !== null && !projector.running && projector.retryAt !== null) {
    reasons.push(
      `the projector is down (${projector.lastError ?? 'unknown cause'}); next start in ${seconds(projector.retryAt - input.now)}`,
    );
  }
  const lag = totalLag(input.lag);
  if (input.lag === null) reasons.push('lag not measured yet');
  else if (input.now - input.lag.at > input.stallTimeoutMs) {
    reasons.push(`lag could not be measured for ${seconds(input.now - input.lag.at)}`);
  }
  if (lag !== null && lag > input.readyMaxLag) reasons.push(`lag ${lag} exceeds ${input.readyMaxLag}`);
  for (const batch of input.unreadable ?? []) {
    reasons.push(
      `${batch.topic} partition ${batch.partition} cannot be read at offset ${batch.offset} (${batch.cause}); the other partitions go on, this one is read again in ${seconds(batch.at + batch.retryInMs - input.now)}` +
        skipHint(batch),
    );
  }
  if (input.stalledSince !== null && input.now - input.stalledSince > input.stallTimeoutMs) {
    reasons.push(
      `the consumer made no progress for ${seconds(input.now - input.stalledSince)} while lagging`,
    );
  }
  return { ready: reasons.length === 0, reasons };
}

/**
 * The service's named states and the transitions between them. The state is derived from facts
 * (is a projector running, how far behind is the served model, is a candidate being built) by one
 * pure function; `ServiceStateMachine` records each change, checks it against the table and tells
 * its listener.
 */
export const serviceStates = [
  'starting',
  'catching_up',
  'live',
  'restarting',
  'rebuilding',
  'switching',
  'stopping',
  'stopped',
] as const;

export type ServiceState = (typeof serviceStates)[number];

/** What each state means, for the runbook and the logs. */
export const stateMeaning: Record<ServiceState, string> = {
  starting: 'the served model is open; its projector has not started yet',
  catching_up: 'the projector runs and the served model lags the topics by more than READY_MAX_LAG',
  live: 'the projector runs and the served model is within READY_MAX_LAG of the topics',
  restarting: 'the projector failed (or stalled) and waits for its next start, with backoff',
  rebuilding:
    'a candidate model is being caught up in a worker thread; the current one is served until the candidate has reached it on every partition',
  switching: 'the candidate has caught up; the served model is being replaced',
  stopping: 'shutting down: no new requests, projectors stopping',
  stopped: 'shut down',
};

const running = ['catching_up', 'live', 'restarting', 'rebuilding', 'switching', 'stopping'] as const;

/** Allowed transitions; anything else is a bug in the lifecycle, logged and counted as such. */
export const allowedTransitions: Record<ServiceState, readonly ServiceState[]> = {
  starting: running,
  catching_up: running,
  live: running,
  restarting: running,
  rebuilding: running,
  switching: running,
  stopping: ['stopped'],
  stopped: [],
};

export interface StateFacts {
  stopping: boolean;
  stopped: boolean;
  switching: boolean;
  /** a candidate model is being built or caught up */
  candidate: boolean;
  /** the served model's projector: null before its first start; false while it waits for a restart */
  projectorRunning: boolean | null;
  /** the served model's total lag, null when not measured */
  totalLag: number | null;
  readyMaxLag: number;
}

export function serviceState(f: StateFacts): ServiceState {
  if (f.stopped) return 'stopped';
  if (f.stopping) return 'stopping';
  if (f.switching) return 'switching';
  if (f.candidate) return 'rebuilding';
  if (f.projectorRunning === null) return 'starting';
  if (!f.projectorRunning) return 'restarting';
  return f.totalLag !== null && f.totalLag <= f.readyMaxLag ? 'live' : 'catching_up';
}

export class ServiceStateMachine {
  private current: ServiceState = 'starting';
  /** transitions the table does not allow (should stay 0) */
  invalidTransitions = 0;

  constructor(private readonly listener: (from: ServiceState, to: ServiceState, allowed: boolean) => void) {}

  get state(): ServiceState {
    return this.current;
  }

  update(next: ServiceState): void {
    if (next === this.current) return;
    const allowed = allowedTransitions[this.current].includes(next);
    if (!allowed) this.invalidTransitions += 1;
    const from = this.current;
    this.current = next;
    this.listener(from, next, allowed);
  }
}

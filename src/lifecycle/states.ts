/**
 * The lifecycle's states as data, and the table of transitions between them. Each state holds what
 * only it needs: a candidate (with its gain mark and the version candidate's lock) exists only while
 * catching up a candidate or switching. The README's state table and diagram are generated from this file
 * (`npm run contracts`), and a test fails when they are stale.
 */
import type { Generation } from './generation.js';

export const serviceStates = [
  'starting',
  'catching_up',
  'live',
  'restarting',
  'catching_up_candidate',
  'switching',
  'stopping',
  'stopped',
] as const;

export type ServiceState = (typeof serviceStates)[number];

/** A candidate's distance to the served model at the start of a pacing window. */
export interface GainMark {
  distance: number;
  at: number;
}

/** Releases the rebuild lock this process holds for its own version candidate. */
export type ReleaseLock = () => void;

/** The served model alone, its projector starting, lagging, within READY_MAX_LAG, or waiting to restart. */
export interface Serving {
  name: 'starting' | 'catching_up' | 'live' | 'restarting';
  served: Generation;
}

export interface CatchingUpCandidate {
  name: 'catching_up_candidate';
  served: Generation;
  candidate: Generation;
  /** the candidate's distance to the served model when last marked; null until measured */
  gainMark: GainMark | null;
  /** held while the candidate is this process's own version candidate */
  lock: ReleaseLock | null;
}

export interface Switching {
  name: 'switching';
  served: Generation;
  candidate: Generation;
  lock: ReleaseLock | null;
}

export interface Stopping {
  name: 'stopping';
  served: Generation;
  candidate: Generation | null;
  lock: ReleaseLock | null;
}

export interface Stopped {
  name: 'stopped';
  served: Generation;
}

export type LifecycleState = Serving | CatchingUpCandidate | Switching | Stopping | Stopped;

/** What each state means and what the service does in it (the README's state table). */
export const stateMeaning: Record<ServiceState, { means: string; does: string }> = {
  starting: {
    means: 'the served model is open; its projector has not started yet',
    does: 'serves the model on disk, unready',
  },
  catching_up: {
    means:
      'the projector runs and the served model lags by more than `READY_MAX_LAG` (or the lag is not measured yet)',
    does: 'serves, unready; catches up',
  },
  live: {
    means: 'the projector runs and the served model is within `READY_MAX_LAG`',
    does: 'serves, ready',
  },
  restarting: {
    means:
      'the projector failed (its start included: broker unreachable, thread died) or stalled, and waits for its next start',
    does: 'serves the model as it is, unready; retries with backoff from 0.5 s doubling to 30 s, and counts each restart',
  },
  catching_up_candidate: {
    means:
      "a candidate model (a rebuild's `NEXT`, or this process's own rebuild after a projection version change) is caught up in a worker thread that gives way to requests (`CANDIDATE_WORK_SHARE`)",
    does: 'serves the current model (ready if it is current and live) until the candidate has reached it',
  },
  switching: {
    means: 'the candidate has reached the served model on every partition',
    does: 'stops the served projector, waits until the candidate has reached its final positions, swaps, deletes the old',
  },
  stopping: {
    means: 'SIGTERM/SIGINT',
    does: 'stops accepting connections, finishes in-flight requests, stops the projectors, closes the files',
  },
  stopped: { means: 'shut down', does: 'exits' },
};

/** The served model alone: what its projector does decides among these. */
const serving = ['starting', 'catching_up', 'live', 'restarting'] as const;

/**
 * Allowed transitions. Nothing returns to `starting`: a switch hands the served role to a projector
 * that has started (or waits for its next start: `restarting`).
 */
export const allowedTransitions: Record<ServiceState, readonly ServiceState[]> = {
  starting: ['catching_up', 'restarting', 'catching_up_candidate', 'stopping'],
  catching_up: ['live', 'restarting', 'catching_up_candidate', 'stopping'],
  live: ['catching_up', 'restarting', 'catching_up_candidate', 'stopping'],
  restarting: ['catching_up', 'catching_up_candidate', 'stopping'],
  catching_up_candidate: ['switching', 'stopping'],
  switching: ['catching_up', 'restarting', 'catching_up_candidate'],
  stopping: ['stopped'],
  stopped: [],
};

export function isServing(state: LifecycleState): state is Serving {
  return (serving as readonly ServiceState[]).includes(state.name);
}

export function isAllowed(from: ServiceState, to: ServiceState): boolean {
  return from === to || allowedTransitions[from].includes(to);
}

/** A transition the table does not allow: thrown where transitions are strict (tests). */
export class InvalidTransition extends Error {
  readonly code = 'INVALID_STATE_TRANSITION';
  constructor(
    readonly from: ServiceState,
    readonly to: ServiceState,
  ) {
    super(`the lifecycle may not go from ${from} to ${to}`);
  }
}

/** Whether `from → to` may happen; where transitions are strict (tests), a refused one throws. */
export function checkTransition(from: ServiceState, to: ServiceState, strict: boolean): boolean {
  if (isAllowed(from, to)) return true;
  if (strict) throw new InvalidTransition(from, to);
  return false;
}

/** The candidate of a state that has one. */
export function candidateOf(state: LifecycleState): Generation | null {
  return 'candidate' in state ? state.candidate : null;
}

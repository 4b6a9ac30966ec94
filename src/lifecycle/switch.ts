/**
 * The switch from the served model to a candidate that has reached it, as one command that returns
 * the next state: serving the candidate, or (it did not reach the served model's final positions in
 * time, or something failed) catching up the candidate again with the served model projecting as before.
 */
import type { Logger } from '../logger.js';
import type { ModelFiles } from '../read-model/files.js';
import type { Clock } from '../supervision/clock.js';
import { hasReached, type Generation } from './generation.js';
import type { Health } from './health.js';
import type { LifecycleMachine } from './machine.js';
import type { LifecycleOptions } from './options.js';
import type { LifecycleState, Serving, Switching } from './states.js';

export interface SwitchContext {
  files: ModelFiles;
  clock: Clock;
  logger: Logger;
  stallTimeoutMs: number;
  health: Health;
  /** aborted by `stop()`: a switch waiting for the candidate gives up */
  stopRequested: AbortSignal;
  /** gives the served model its projector back */
  resumeServed: (served: Generation) => void;
  switched?: (from: string, to: string) => void;
}

/** The context of a lifecycle's switches, from its options. */
export function switchContextOf(
  options: LifecycleOptions,
  health: Health,
  stopRequested: AbortSignal,
  resumeServed: (served: Generation) => void,
): SwitchContext {
  const { files, clock, logger, stallTimeoutMs, events } = options;
  const switched = events?.switched;
  return {
    files,
    clock,
    logger,
    stallTimeoutMs,
    health,
    stopRequested,
    resumeServed,
    ...(switched === undefined ? {} : { switched }),
  };
}

/** The state of a served model alone, from what its projector does now (a switch hands it a started one). */
export function servingState(served: Generation): Serving {
  return { name: served.projector() === null ? 'restarting' : 'catching_up', served };
}

/**
 * Stops the served projector so its position is final, waits until the candidate has reached that
 * too, then swaps. The candidate's projector goes on as the served one's.
 */
export async function switchOver(state: Switching, ctx: SwitchContext): Promise<LifecycleState> {
  const { served: previous, candidate, lock } = state;
  const stillCatchingUp = (): LifecycleState => {
    // Nothing was swapped: keep serving, and projecting into, the current model.
    if (previous.currentVersion && !ctx.stopRequested.aborted) ctx.resumeServed(previous);
    return { name: 'catching_up_candidate', served: previous, candidate, gainMark: null, lock };
  };
  // The served model gets no events until the swap: the last few batches run at full speed, and
  // so does the candidate from now on if the switch has to wait.
  candidate.setGiveWay(false);
  try {
    await previous.stopProjecting();
    // What the served file holds once nothing writes to it: the mark the candidate must reach.
    const final = previous.storedPositions();
    // The candidate is at most a few batches behind the final positions; if it does not get there
    // within the stall timeout, the served model gets its projector back and the switch waits.
    const deadline = ctx.clock.now() + ctx.stallTimeoutMs;
    let reached = hasReached(candidate.positions(), final);
    while (!reached && !ctx.stopRequested.aborted && ctx.clock.now() < deadline) {
      await ctx.clock.sleep(20, ctx.stopRequested);
      reached = hasReached(candidate.positions(), final);
    }
    if (ctx.stopRequested.aborted) return stillCatchingUp();
    if (!reached) {
      ctx.logger.warn(
        { candidate: candidate.file },
        'the candidate did not reach the served model in time; serving and projecting the current one meanwhile',
      );
      return stillCatchingUp();
    }
    ctx.files.promote(candidate.file);
    ctx.files.clearNext(candidate.file);
  } catch (error) {
    ctx.logger.error({ err: error }, 'switching to the caught-up model failed; trying again');
    return stillCatchingUp();
  }
  ctx.health.switched(previous);
  lock?.();
  ctx.logger.info({ from: previous.file, to: candidate.file }, 'switched to the caught-up model');
  ctx.switched?.(previous.file, candidate.file);
  // The lifecycle closes and deletes the previous file once no request thread reads it.
  return servingState(candidate);
}

/**
 * The switch command: when the adopted candidate has reached the served model on every partition
 * (`hasReached`, the rule that keeps a replica from ever serving an older model), switches over and
 * moves the machine to the state that follows. Returns the model served before and that state; null
 * when there was nothing to switch to.
 */
export async function switchIfReached(
  machine: LifecycleMachine,
  ctx: SwitchContext,
): Promise<{ previous: Generation; next: LifecycleState } | null> {
  const state = machine.current;
  if (state.name !== 'catching_up_candidate') return null;
  if (!hasReached(state.candidate.positions(), state.served.positions())) return null;
  const { served, candidate, lock } = state;
  const switching = { name: 'switching', served, candidate, lock } as const;
  machine.moveTo(switching);
  const next = await switchOver(switching, ctx);
  machine.moveTo(next);
  return { previous: served, next };
}

/**
 * A generation's projector, started with its reports (batch applied, unreadable batch, restart,
 * running) turned into commands of the lifecycle's queue, each reading and moving the state.
 */
import type { Clock } from '../supervision/clock.js';
import type { Generation, ProjectorDeps } from './generation.js';
import type { Health } from './health.js';
import type { LifecycleMachine } from './machine.js';
import type { LifecycleEvents, LifecycleOptions } from './options.js';
import { isServing } from './states.js';

export interface ProjectorContext {
  machine: LifecycleMachine;
  health: Health;
  clock: Clock;
  deps: ProjectorDeps;
  events?: LifecycleEvents;
  /** a batch of the candidate is committed: the switch may be due */
  candidateMoved: () => void;
}

/** The context of a lifecycle's projectors, from its options. */
export function projectorContextOf(
  options: LifecycleOptions,
  machine: LifecycleMachine,
  health: Health,
  candidateMoved: () => void,
): ProjectorContext {
  const { clock, logger, startProjector, backoff, events } = options;
  return {
    machine,
    health,
    clock,
    deps: { startProjector, clock, logger, ...(backoff === undefined ? {} : { backoff }) },
    ...(events === undefined ? {} : { events }),
    candidateMoved,
  };
}

/** Starts `generation`'s supervised projector under `groupId`. */
export function startProjecting(generation: Generation, groupId: string, ctx: ProjectorContext): void {
  const { machine, health, events } = ctx;
  const roleOf = (): 'served' | 'candidate' =>
    generation === machine.current.served ? 'served' : 'candidate';
  generation.project(groupId, roleOf(), ctx.deps, {
    batchApplied: (topic, partition, outcome) =>
      machine.send('batch applied', () => {
        const state = machine.current;
        if (generation === state.served) {
          health.readAgain(topic, partition);
          events?.batchApplied?.(outcome);
        } else if (state.name === 'catching_up_candidate' && generation === state.candidate) {
          ctx.candidateMoved();
        }
      }),
    unreadable: (batch) => {
      events?.unreadable?.(batch);
      const at = ctx.clock.now();
      machine.send('unreadable batch', () => {
        if (generation === machine.current.served) health.unreadableAt(batch, at);
      });
    },
    restarted: (reason) => {
      const role = roleOf();
      machine.send('projector restarted', () => {
        events?.restarted?.(role, reason);
        const state = machine.current;
        if (generation !== state.served) return;
        health.projectorRestarted();
        if (isServing(state)) machine.moveTo({ name: 'restarting', served: state.served });
      });
    },
    running: () =>
      machine.send('projector running', () => {
        const state = machine.current;
        if (!isServing(state) || generation !== state.served) return;
        if (state.name === 'starting' || state.name === 'restarting')
          machine.moveTo({ name: 'catching_up', served: state.served });
      }),
  });
}

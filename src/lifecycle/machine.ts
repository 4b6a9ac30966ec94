/**
 * The lifecycle's state and its one queue of commands. A command moves the state with `moveTo`,
 * which checks the move against the table: one outside it throws where transitions are strict
 * (tests) and is otherwise refused, logged and reported (the service counts it).
 */
import type { Logger } from '../logger.js';
import { Mailbox } from './mailbox.js';
import type { LifecycleEvents } from './options.js';
import { checkTransition, InvalidTransition, type LifecycleState, type ServiceState } from './states.js';

export class LifecycleMachine {
  private value: LifecycleState | null = null;
  private readonly mailbox: Mailbox;

  constructor(
    private readonly options: {
      logger: Logger;
      events?: LifecycleEvents;
      strictTransitions?: boolean;
      /** after every move, allowed ones only (the same name included) */
      moved?: () => void;
    },
  ) {
    const { logger } = options;
    this.mailbox = new Mailbox((command, error) => {
      logger.error({ err: error, command }, 'a lifecycle command failed');
      // Where transitions are strict, a refused one fails the run even from a command nobody awaits.
      if (error instanceof InvalidTransition && options.strictTransitions === true) {
        setImmediate(() => {
          throw error;
        });
      }
    });
  }

  started(): boolean {
    return this.value !== null;
  }

  /** The state; the lifecycle has one from `start()` on. */
  get current(): LifecycleState {
    if (this.value === null) throw new Error('the lifecycle has not started');
    return this.value;
  }

  /** The named state (`starting` before the first). */
  name(): ServiceState {
    return this.value?.name ?? 'starting';
  }

  /** The first state, at `start()`. */
  begin(first: LifecycleState): void {
    if (this.value !== null) return;
    this.value = first;
    this.options.moved?.();
  }

  moveTo(next: LifecycleState): void {
    const from = this.current.name;
    const { logger, events } = this.options;
    if (!checkTransition(from, next.name, this.options.strictTransitions === true)) {
      logger.error({ from, to: next.name }, 'refused a state transition the lifecycle does not allow');
      events?.stateChanged?.(from, next.name, false);
      return;
    }
    this.value = next;
    this.options.moved?.();
    if (from === next.name) return;
    logger.info({ from, to: next.name }, 'service state changed');
    events?.stateChanged?.(from, next.name, true);
  }

  /** Handles `command` after those before it. */
  post<T>(name: string, command: () => T | Promise<T>): Promise<T> {
    return this.mailbox.post(name, command);
  }

  /** Posts a command whose outcome nobody awaits. */
  send(name: string, command: () => unknown): void {
    this.mailbox.send(name, command);
  }
}

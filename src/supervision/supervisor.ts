/**
 * Keeps one projector running: any failure, a failed start included, is followed by a restart after
 * an exponential backoff, and every restart is reported (the service counts them in a metric).
 * Nothing stays stopped until an operator acts.
 */
import { backoffDelay, type Backoff } from '../backoff.js';
import type { Logger } from '../logger.js';
import type { Clock } from './clock.js';
import type { RunningProjector } from '../projector/projector-handle.js';

export type RestartReason = 'start_failed' | 'failed' | 'stalled';

export const defaultBackoff = { initialMs: 500, maxMs: 30_000 } satisfies Backoff;

export interface SupervisorStatus {
  running: boolean;
  /** failures in a row without progress in between */
  failures: number;
  lastError: string | null;
  /** when the next start is due, while waiting for it */
  retryAt: number | null;
}

export interface SupervisorOptions {
  name: string;
  /** `signal` is aborted by `stop()`, so that a start still under way is given up */
  start: (signal: AbortSignal) => Promise<RunningProjector>;
  clock: Clock;
  logger: Logger;
  backoff?: Backoff;
  /** a start still under way after this long is given up (its signal aborted) and tried again */
  startTimeoutMs?: number;
  onRestart?: (reason: RestartReason) => void;
  /** a projector has started and runs */
  onRunning?: () => void;
}

export class Supervisor {
  private current: RunningProjector | null = null;
  private lastPositions: ReadonlyMap<string, number> = new Map();
  private stopping = false;
  private readonly stopped = new AbortController();
  private loop: Promise<void> | null = null;
  private wake = new AbortController();
  private restartRequested: { reason: RestartReason; resolve: () => void } | null = null;
  private state: SupervisorStatus = { running: false, failures: 0, lastError: null, retryAt: null };

  constructor(private readonly options: SupervisorOptions) {}

  /** Starts the first attempt and keeps the projector running until `stop()`. */
  start(): void {
    this.loop ??= this.run();
  }

  status(): SupervisorStatus {
    return { ...this.state };
  }

  /** The running projector, or null while it starts or waits for a retry. */
  running(): RunningProjector | null {
    return this.current;
  }

  /** Stops the running projector and starts a new one at once (the stall watchdog's remedy). */
  restart(reason: RestartReason): void {
    if (this.current === null || this.restartRequested !== null) return;
    this.restartRequested = { reason, resolve: () => undefined };
    this.wake.abort();
  }

  /** Stops the projector and the loop; no restart follows. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.wake.abort();
    await this.loop;
  }

  /** One start, given up when the supervisor stops or the start timeout passes. */
  private async startOnce(): Promise<RunningProjector> {
    const timeoutMs = this.options.startTimeoutMs;
    if (timeoutMs === undefined) return this.options.start(this.stopped.signal);
    const attempt = new AbortController();
    const giveUp = (): void => attempt.abort();
    this.stopped.signal.addEventListener('abort', giveUp, { once: true });
    const done = new AbortController();
    void this.options.clock.sleep(timeoutMs, done.signal).then(() => {
      if (!done.signal.aborted) giveUp();
    });
    try {
      return await this.options.start(attempt.signal);
    } finally {
      done.abort();
      this.stopped.signal.removeEventListener('abort', giveUp);
    }
  }

  /** Read through a call: the flag changes while the loop awaits. */
  private isStopping(): boolean {
    return this.stopping;
  }

  private async run(): Promise<void> {
    const { clock, logger, name } = this.options;
    const backoff = this.options.backoff ?? defaultBackoff;
    let attempt = 0;
    while (!this.stopping) {
      let reason: RestartReason;
      const before = new Map(this.lastPositions);
      try {
        const projector = await this.startOnce();
        if (this.isStopping()) {
          await projector.stop();
          break;
        }
        this.current = projector;
        this.state = { ...this.state, running: true, retryAt: null };
        this.options.onRunning?.();
        const failure = await Promise.race([
          projector.failed,
          new Promise<null>((resolve) => this.wake.signal.addEventListener('abort', () => resolve(null))),
        ]);
        this.lastPositions = new Map(projector.positions());
        this.current = null;
        this.state = { ...this.state, running: false };
        if (this.isStopping()) {
          await projector.stop();
          break;
        }
        if (failure === null) {
          reason = this.restartRequested?.reason ?? 'failed';
          this.state.lastError = `restarted: ${reason}`;
          await projector
            .stop()
            .catch((error: unknown) => logger.warn({ err: error, projector: name }, 'stopping it'));
        } else {
          reason = 'failed';
          this.state.lastError = failure.message;
          logger.error({ err: failure, projector: name }, 'projector failed');
        }
      } catch (error) {
        if (this.isStopping()) break;
        reason = 'start_failed';
        this.state.lastError = error instanceof Error ? error.message : String(error);
        logger.error({ err: error, projector: name }, 'projector failed to start');
      }
      this.restartRequested = null;
      this.wake = new AbortController();
      if (this.isStopping()) break;
      const progressed = [...this.lastPositions].some(([key, next]) => next !== before.get(key));
      if (progressed) attempt = 0;
      // A restart the watchdog asked for goes ahead at once; a failure waits, longer each time in a row.
      const delay = reason === 'stalled' ? 0 : backoffDelay(backoff, attempt++);
      this.state = {
        ...this.state,
        failures: reason === 'stalled' ? this.state.failures : attempt,
        retryAt: clock.now() + delay,
      };
      this.options.onRestart?.(reason);
      logger.warn({ projector: name, reason, retryInMs: delay }, 'restarting the projector');
      await clock.sleep(delay, this.wake.signal);
      if (this.isStopping()) break;
      this.wake = new AbortController();
    }
    this.state = { ...this.state, running: false, retryAt: null };
  }
}

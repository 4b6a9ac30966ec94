/**
 * Catching up by replay, as the lifecycle runs it: a replica far behind (`replay-watch.ts` says
 * when) rebuilds its model from the start of the topics in a thread of its own, with the `rebuild`
 * command's machinery, instead of applying its backlog batch by batch. The served model keeps
 * answering meanwhile, its projector stopped so that the replay has the cores; the new model is
 * proposed like any rebuild, and served once it has reached the served one (the one switch of
 * every candidate, which never serves an older model).
 */
import type { AcceptedLoss } from '../kafka/history.js';
import type { PartitionEnds, Positions } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import type { ReplayResult } from '../projector/replay-thread.js';
import type { HealthReport } from './health.js';
import type { LifecycleOptions } from './options.js';
import {
  logSizeOf,
  replayLosesNothing,
  replayPays,
  ReplayWatch,
  type CatchUpOptions,
  type RunningReplay,
} from './replay-watch.js';

export type { CatchUpOptions };

/** What a catch-up by replay asks of the served model. */
export interface ReplayedModel {
  readonly file: string;
  positions(): Positions;
  /** stops its projector; resolves once it has stopped */
  stopProjecting(): Promise<unknown>;
}

/** What a catch-up by replay asks of the lifecycle: its queue, and the moves only the lifecycle makes. */
export interface CatchUpHost<Served> {
  logger: Logger;
  now: () => number;
  /** queues a command behind the lifecycle's others */
  send: (label: string, command: () => void) => void;
  /** whether another rebuild holds the lock */
  rebuildRunning: () => boolean;
  /** the operators' acceptances of lost history */
  acceptedLosses: () => readonly AcceptedLoss[];
  /** proposes the model in `file` (`NEXT`) and adopts it; throws when it cannot */
  propose: (file: string) => void;
  /** gives `served` its projector back if it is still served and not projecting; while a candidate is adopted too, if `evenWithCandidate` */
  resume: (served: Served, evenWithCandidate: boolean) => void;
  /** whether the service is stopping */
  stopping: () => boolean;
}

/**
 * The catch-up by replay of one lifecycle: starts a replay when the served model is far behind,
 * stops the served projector meanwhile, proposes the replay's model once it has finished, and gives
 * the served model its projector back when the replay fails. Its commands run in the lifecycle's queue.
 */
export class CatchUpByReplay<Served extends ReplayedModel> {
  private readonly watch: ReplayWatch<Served>;

  constructor(
    private readonly options: CatchUpOptions,
    watch: ConstructorParameters<typeof ReplayWatch<Served>>[1],
    private readonly host: CatchUpHost<Served>,
  ) {
    this.watch = new ReplayWatch<Served>(options, watch);
  }

  /** The catch-up of a lifecycle with `options`, or null where they ask for none. */
  static of<Served extends ReplayedModel>(
    options: LifecycleOptions,
    lifecycle: Pick<CatchUpHost<Served>, 'send' | 'propose' | 'resume' | 'stopping'>,
  ): CatchUpByReplay<Served> | null {
    const { catchUp, clock, events, files } = options;
    if (catchUp === undefined) return null;
    const now = (): number => clock.now();
    const watch = {
      stallTimeoutMs: options.stallTimeoutMs,
      now,
      onProgress: (progress: { done: number; total: number }) =>
        events?.candidateProgress?.(progress.total === 0 ? 1 : progress.done / progress.total),
    };
    const host = {
      ...lifecycle,
      logger: options.logger,
      now,
      rebuildRunning: () => files.rebuildRunning(),
      acceptedLosses: () => files.acceptedLosses(),
    };
    return new CatchUpByReplay<Served>(catchUp, watch, host);
  }

  active(): RunningReplay<Served> | null {
    return this.watch.active();
  }

  /** A replay under way makes the service unready, and says how far it is. */
  joinedTo(report: HealthReport): HealthReport {
    const replay = this.watch.active();
    if (replay === null) return report;
    report.ready = false;
    report.replay = { done: replay.done, total: replay.total };
    report.reasons.push(
      `catching up by replay into a new model (${replay.done} of ${replay.total ?? 'unknown'} messages)`,
    );
    return report;
  }

  abortIfStalled(now: number): void {
    this.watch.abortIfStalled(now);
  }

  /** Aborts the replay under way, if any; resolves once it has ended. */
  async abort(): Promise<void> {
    await this.watch.active()?.thread.abort();
  }

  /**
   * Far behind (`lag` messages of the order topics, whose ends are `ends`), the served model is
   * caught up by a replay into a new model; its own projector stops meanwhile, so that the replay
   * has the cores, and starts again if the replay fails.
   */
  lagMeasured(served: Served, lag: number, ends: readonly PartitionEnds[], now: number): void {
    const logSize = logSizeOf(ends);
    if (!replayPays(lag, logSize, this.options)) return;
    // A replay reads the log from its start: where the log has lost messages, its build would be
    // refused; the served projector is not stopped for it.
    if (!replayLosesNothing(ends, this.host.acceptedLosses())) return;
    // Another rebuild holds the lock: a replay would stop the served projector only to be refused.
    if (this.host.rebuildRunning()) return;
    const replay = this.watch.maybeStart(served, lag, logSize, now);
    if (replay === null) return;
    this.host.logger.info(
      { lag, logSize, served: served.file },
      'far behind: catching up by replaying the topics into a new model; the served model answers meanwhile',
    );
    // Its end is handled once the served projector has stopped: only then can it be started again.
    const stopped = served.stopProjecting().catch(() => false);
    void stopped
      .then(() => replay.thread.done)
      .then(
        (result) => this.host.send('replay finished', () => this.finished(replay, result)),
        (error: unknown) => this.host.send('replay failed', () => this.failed(replay, error)),
      );
  }

  /** The replay's model is proposed like a rebuild's, and adopted: served once it has reached the served one. */
  private finished(replay: RunningReplay<Served>, result: ReplayResult): void {
    const { logger } = this.host;
    logger.info(
      { ...result, eventsPerSecond: Math.round(result.done / Math.max(result.durationMs / 1000, 0.001)) },
      'the catch-up replay finished; its model is served once it has reached the served one',
    );
    let proposed = false;
    try {
      this.host.propose(result.file);
      proposed = true;
    } catch (error) {
      logger.error({ err: error, file: result.file }, 'proposing the replayed model failed');
    } finally {
      this.watch.ended(replay, !proposed, this.host.now());
      // Not adopted (it could not be opened or proposed): the served model goes on by itself.
      // Adopted, it is switched to at once; a switch that fails gives the served model its
      // projector back.
      this.host.resume(replay.served, false);
    }
  }

  private failed(replay: RunningReplay<Served>, error: unknown): void {
    const retryInMs = this.watch.ended(replay, true, this.host.now());
    if (this.host.stopping()) {
      this.host.logger.info('the catch-up replay was aborted: the service stops');
      return;
    }
    this.host.logger.warn(
      { err: error, retryInMs },
      'the catch-up replay failed; the served model catches up by itself meanwhile',
    );
    this.host.resume(replay.served, true);
  }
}

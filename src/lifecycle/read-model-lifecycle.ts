/**
 * The lifecycle of the served read model, as one state machine with one queue: lag checks,
 * proposal checks, projector events, switches and stop are commands handled one at a time, each
 * moving the state (`states.ts`) along the table. Reads for requests stay synchronous, outside the
 * queue. A replica never answers from a model older than one it has already answered from.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { orderModelRoles } from '../../schemas/events.js';
import { keysStoreOf } from '../keys/keys-of-lifecycle.js';
import type { KeysStore } from '../keys/keys-store.js';
import type { PartitionEnds } from '../kafka/port.js';
import type { ReadView } from '../read-model/read-view.js';
import type { ApiReads } from '../read-model/reader.js';
import { Candidates, paceCandidate } from './candidate.js';
import { Generation } from './generation.js';
import { startProjecting, type ProjectorContext } from './projector-events.js';
import { Health, type HealthReport } from './health.js';
import { LifecycleMachine } from './machine.js';
import { ServedView } from './served-view.js';
import type { LifecycleOptions } from './options.js';
import { candidateOf, isServing, type ReleaseLock, type ServiceState } from './states.js';
import { hasReached } from './generation.js';
import { switchOver } from './switch.js';
import { logSizeOf, replayLosesNothing, ReplayWatch, type RunningReplay } from './catch-up.js';
import type { ReplayResult } from '../projector/replay-thread.js';

export type { LifecycleEvents, LifecycleOptions } from './options.js';

export type { HealthReport };

export class ReadModelLifecycle {
  private readonly machine: LifecycleMachine;
  private readonly stopRequested = new AbortController();
  private readonly health_: Health;
  /** API keys: a store of their own, fed by its own consumer, never replaced by a switch */
  private readonly keys: KeysStore;
  private readonly modelTopics: ReadonlySet<string>;
  private readonly candidates: Candidates;
  private readonly projectors: ProjectorContext;

  /** a catch-up by replay (`catch-up.ts`); null when the options ask for none */
  private readonly replays: ReplayWatch<Generation> | null;

  /** What the API answers from, published to the request threads as it changes. */
  private readonly view: ServedView;

  /** What the HTTP API of this thread reads (`readView()` for the others). */
  get reads(): ApiReads {
    return this.view.reads;
  }

  constructor(private readonly options: LifecycleOptions) {
    const { logger, clock } = options;
    // A pointer naming no model file stops the service before anything is created, the keys store too.
    options.files.checkPointers();
    this.modelTopics = new Set(orderModelRoles.map((role) => options.topics[role]));
    this.machine = new LifecycleMachine({ ...options, moved: () => this.view.refresh() });
    this.health_ = new Health(options);
    this.candidates = new Candidates({ ...options, modelTopics: this.modelTopics });
    this.keys = keysStoreOf(options, () => this.view.refresh());
    this.view = new ServedView({
      state: () => this.machine.current,
      keys: this.keys,
      files: options.files,
      logger,
      views: options.views,
    });
    this.projectors = {
      machine: this.machine,
      health: this.health_,
      clock,
      deps: {
        startProjector: options.startProjector,
        clock,
        logger,
        ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      },
      ...(options.events === undefined ? {} : { events: options.events }),
      candidateMoved: () => void this.maybeSwitch(),
    };
    this.replays =
      options.catchUp === undefined
        ? null
        : new ReplayWatch<Generation>(options.catchUp, {
            stallTimeoutMs: options.stallTimeoutMs,
            now: () => clock.now(),
            onProgress: (progress) =>
              options.events?.candidateProgress?.(progress.total === 0 ? 1 : progress.done / progress.total),
          });
  }

  /** Opens the served model (creating the first one), adopts a proposed candidate, and starts the projectors. */
  start(): void {
    if (this.machine.started()) return;
    const { files, logger } = this.options;
    const served = Generation.openServed(files, logger, this.modelTopics);
    this.machine.begin({ name: 'starting', served });
    this.keys.start();
    if (served.currentVersion) this.project(served, this.options.groupId);
    else
      logger.warn(
        { file: served.file, expected: PROJECTION_VERSION },
        'the served model is of an older projection version',
      );
    this.checkProposals();
  }

  /** The view the API answers from now, as request threads open it. */
  readView(): ReadView {
    return this.view.readView();
  }

  state(): ServiceState {
    return this.machine.name();
  }

  servedFile(): string {
    return this.machine.current.served.file;
  }

  /** The served model's running projector (diagnostics and tests); null while none runs. */
  servedProjector(): ReturnType<Generation['projector']> {
    return this.machine.current.served.projector();
  }

  /** The keys store's running consumer (diagnostics and tests); null while none runs. */
  keysProjector(): ReturnType<Generation['projector']> {
    return this.keys.projector();
  }

  candidateFile(): string | null {
    return candidateOf(this.machine.current)?.file ?? null;
  }

  /** Readiness and what it rests on; reads only. */
  health(): HealthReport {
    const now = this.options.clock.now();
    const report = this.health_.report(this.machine.current, now);
    const replay = this.replays?.active() ?? null;
    if (replay !== null) {
      report.ready = false;
      report.replay = { done: replay.done, total: replay.total };
      report.reasons.push(
        `catching up by replay into a new model (${replay.done} of ${replay.total ?? 'unknown'} messages)`,
      );
    }
    return this.keys.joinedTo(report, now);
  }

  /**
   * Measures the served model's lag (end offset − stored position per partition), restarts a
   * projector that lags without moving for longer than the stall timeout, and paces a candidate.
   * The end offsets are asked for outside the queue: a broker that does not answer holds up no command.
   */
  async checkLag(): Promise<void> {
    if (!this.machine.started() || this.stopRequested.signal.aborted) return;
    let ends: PartitionEnds[];
    try {
      ends = await this.options.endOffsets(Object.values(this.options.topics));
    } catch (error) {
      // A replay waiting on a broker that does not answer is aborted all the same.
      await this.machine.post('lag not measured', () => {
        this.replays?.abortIfStalled(this.options.clock.now());
      });
      throw error;
    }
    await this.machine.post('lag measured', () => this.lagMeasured(ends));
  }

  /** Looks at `NEXT` for a proposed model, and starts this process's own rebuild after a version change. */
  checkProposals(): void {
    this.machine.send('check proposals', () => this.proposals());
  }

  /** Switches to the candidate once it has reached the served model on every partition. */
  maybeSwitch(): Promise<void> {
    return this.machine.post('switch', () => this.switchIfReached());
  }

  /** Stops every projector and closes the models. A candidate stays proposed in `NEXT` for the next start. */
  async stop(): Promise<void> {
    if (!this.machine.started()) return;
    this.stopRequested.abort();
    await this.machine.post('stop', () => this.stopAll());
  }

  private project(generation: Generation, groupId: string): void {
    startProjecting(generation, groupId, this.projectors);
  }

  private lagMeasured(ends: readonly PartitionEnds[]): void {
    const state = this.machine.current;
    if (state.name === 'stopping' || state.name === 'stopped') return;
    const now = this.options.clock.now();
    const keys = this.keys.measured(ends, now);
    const modelEnds = ends.filter((end) => this.modelTopics.has(end.topic));
    const partitions = this.health_.measured(modelEnds, state.served, candidateOf(state), now);
    this.options.events?.lagMeasured?.([...partitions, ...keys]);
    if (state.name === 'rebuilding') {
      const ratio = this.health_.progressOf(state.candidate);
      if (ratio !== null) this.options.events?.candidateProgress?.(ratio);
      const gainMark = paceCandidate(state, ends, now, this.options);
      this.machine.moveTo({ ...state, gainMark });
    } else if (state.name === 'catching_up' || state.name === 'live') {
      const lag = this.health_.totalLag();
      const name = lag !== null && lag <= this.options.readyMaxLag ? 'live' : 'catching_up';
      this.machine.moveTo({ name, served: state.served });
      if (name === 'catching_up' && lag !== null && state.served.currentVersion)
        this.maybeReplay(state.served, lag, modelEnds, now);
    }
    this.replays?.abortIfStalled(now);
  }

  /**
   * Far behind, the served model is caught up by a replay into a new model (`catch-up.ts`); its own
   * projector stops meanwhile, so that the replay has the cores, and starts again if the replay fails.
   */
  private maybeReplay(served: Generation, lag: number, ends: readonly PartitionEnds[], now: number): void {
    if (this.replays === null) return;
    // A replay reads the log from its start: where the log has lost messages the served model
    // holds, it would build an older model.
    if (!replayLosesNothing(ends, served.positions())) return;
    // Another rebuild holds the lock: a replay would stop the served projector only to be refused.
    if (this.options.files.rebuildRunning()) return;
    const replay = this.replays.maybeStart(served, lag, logSizeOf(ends), now);
    if (replay === null) return;
    const logSize = logSizeOf(ends);
    this.options.logger.info(
      { lag, logSize, served: served.file },
      'far behind: catching up by replaying the topics into a new model; the served model answers meanwhile',
    );
    // Its end is handled once the served projector has stopped: only then can it be started again.
    const stopped = served.stopProjecting().catch(() => false);
    void stopped
      .then(() => replay.thread.done)
      .then(
        (result) => this.machine.send('replay finished', () => this.replayFinished(replay, result)),
        (error: unknown) => this.machine.send('replay failed', () => this.replayFailed(replay, error)),
      );
  }

  /** The replay's model is proposed like a rebuild's, and adopted: served once it has reached the served one. */
  private replayFinished(replay: RunningReplay<Generation>, result: ReplayResult): void {
    this.options.logger.info(
      { ...result, eventsPerSecond: Math.round(result.done / Math.max(result.durationMs / 1000, 0.001)) },
      'the catch-up replay finished; its model is served once it has reached the served one',
    );
    let proposed = false;
    try {
      this.options.files.proposeNext(result.file);
      proposed = true;
      this.proposals();
    } catch (error) {
      this.options.logger.error({ err: error, file: result.file }, 'proposing the replayed model failed');
    } finally {
      this.replays?.ended(replay, !proposed, this.options.clock.now());
      // Not adopted (it could not be opened or proposed): the served model goes on by itself.
      // Adopted, it is switched to at once; a switch that fails gives the served model its
      // projector back.
      if (isServing(this.machine.current)) this.resumeServed(replay.served);
    }
  }

  private replayFailed(replay: RunningReplay<Generation>, error: unknown): void {
    const retryInMs = this.replays?.ended(replay, true, this.options.clock.now());
    const state = this.machine.current.name;
    if (state === 'stopping' || state === 'stopped') {
      this.options.logger.info('the catch-up replay was aborted: the service stops');
      return;
    }
    this.options.logger.warn(
      { err: error, retryInMs },
      'the catch-up replay failed; the served model catches up by itself meanwhile',
    );
    this.resumeServed(replay.served);
  }

  /** Gives the served model its projector back, unless it is no longer served or it runs already. */
  private resumeServed(served: Generation): void {
    const state = this.machine.current;
    if (state.served !== served || served.isProjecting()) return;
    if (isServing(state) || state.name === 'rebuilding') this.project(served, this.options.groupId);
  }

  private proposals(): void {
    const state = this.machine.current;
    if (!isServing(state) && state.name !== 'rebuilding') return;
    const next = this.candidates.next(
      state.served,
      candidateOf(state),
      state.name === 'rebuilding' ? state.lock : null,
    );
    if (next !== null) this.adopt(next.candidate, next.lock);
    if (next?.proposed === true)
      this.options.logger.info(
        { file: next.candidate.file, served: state.served.file },
        'catching up a proposed model before serving it',
      );
  }

  private adopt(candidate: Generation, lock: ReleaseLock | null): void {
    const served = this.machine.current.served;
    candidate.setGiveWay(true);
    this.machine.moveTo({ name: 'rebuilding', served, candidate, gainMark: null, lock });
    this.project(candidate, `${this.options.groupId}.candidate.${this.options.clock.now()}`);
    // A candidate ahead of the served model already (a catch-up replay's) is switched to at once,
    // without waiting for a batch of its own.
    void this.maybeSwitch();
  }

  private async switchIfReached(): Promise<void> {
    const state = this.machine.current;
    if (state.name !== 'rebuilding') return;
    if (!hasReached(state.candidate.positions(), state.served.positions())) return;
    const { files, clock, logger, stallTimeoutMs, events } = this.options;
    const switching = {
      name: 'switching',
      served: state.served,
      candidate: state.candidate,
      lock: state.lock,
    } as const;
    this.machine.moveTo(switching);
    const next = await switchOver(switching, {
      files,
      clock,
      logger,
      stallTimeoutMs,
      health: this.health_,
      stopRequested: this.stopRequested.signal,
      resumeServed: (served) => this.project(served, this.options.groupId),
      ...(events?.switched === undefined ? {} : { switched: events.switched }),
    });
    this.machine.moveTo(next);
    if (next.served !== state.served) this.view.retire(state.served);
    if (isServing(next)) void this.checkLag().catch(() => undefined);
  }

  private async stopAll(): Promise<void> {
    const state = this.machine.current;
    if (state.name === 'stopping' || state.name === 'stopped') return;
    const { served } = state;
    const candidate = candidateOf(state);
    const lock = state.name === 'rebuilding' ? state.lock : null;
    this.machine.moveTo({ name: 'stopping', served, candidate, lock });
    await Promise.all([
      this.replays?.active()?.thread.abort(),
      served.stopProjecting(),
      candidate?.stopProjecting(),
      this.keys.stop(),
      this.view.retired(),
    ]);
    served.close();
    candidate?.close();
    lock?.();
    this.machine.moveTo({ name: 'stopped', served });
  }
}

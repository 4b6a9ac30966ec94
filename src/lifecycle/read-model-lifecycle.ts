/**
 * The lifecycle of the served read model, as one state machine with one queue: lag checks,
 * proposal checks, projector events, switches and stop are commands handled one at a time, each
 * moving the state (`states.ts`) along the table. Reads for requests stay synchronous, outside the
 * queue. A replica never answers from a model older than one it has already answered from.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { orderModelRoles } from '../../schemas/streams.js';
import { keysStoreOf } from '../keys/keys-of-lifecycle.js';
import type { KeysStore } from '../keys/keys-store.js';
import type { PartitionEnds } from '../kafka/port.js';
import type { ReadView } from '../read-model/read-view.js';
import type { ApiReads } from '../read-model/reader.js';
import { Candidates, candidateMeasured } from './candidate.js';
import { Generation } from './generation.js';
import { projectorContextOf, startProjecting, type ProjectorContext } from './projector-events.js';
import { Health, type HealthReport } from './health.js';
import { LifecycleMachine } from './machine.js';
import { ServedView } from './served-view.js';
import type { LifecycleOptions } from './options.js';
import { candidateOf, isServing, type ReleaseLock, type ServiceState } from './states.js';
import { switchContextOf, switchIfReached, type SwitchContext } from './switch.js';
import { CatchUpByReplay } from './catch-up.js';
import { LogWatch } from './log-watch.js';

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
  private readonly replays: CatchUpByReplay<Generation> | null;
  /** what a switch needs (`switch.ts`) */
  private readonly switching: SwitchContext;
  /** What the API answers from, published to the request threads as it changes. */
  private readonly view: ServedView;
  /** whether the topics can still rebuild the model (`log-watch.ts`); null when the options give no way to ask */
  private readonly logWatch: LogWatch | null;

  /** What the HTTP API of this thread reads (`readView()` for the others). */
  get reads(): ApiReads {
    return this.view.reads;
  }

  constructor(private readonly options: LifecycleOptions) {
    const { logger } = options;
    // A pointer naming no model file stops the service before anything is created, the keys store too.
    options.files.checkPointers();
    this.modelTopics = new Set(orderModelRoles.map((role) => options.topics[role]));
    this.machine = new LifecycleMachine({ ...options, moved: () => this.view.refresh() });
    this.health_ = new Health(options);
    this.logWatch = LogWatch.of(options);
    this.candidates = new Candidates({ ...options, modelTopics: this.modelTopics });
    this.keys = keysStoreOf(options, () => this.view.refresh());
    this.view = new ServedView({
      state: () => this.machine.current,
      keys: this.keys,
      files: options.files,
      logger,
      views: options.views,
    });
    this.projectors = projectorContextOf(options, this.machine, this.health_, () => void this.maybeSwitch());
    const resumeServed = (served: Generation): void => this.project(served, options.groupId);
    this.switching = switchContextOf(options, this.health_, this.stopRequested.signal, resumeServed);
    this.replays = CatchUpByReplay.of<Generation>(options, {
      send: (label, command) => this.machine.send(label, command),
      propose: (file) => {
        options.files.proposeNext(file);
        this.proposals();
      },
      resume: (served, evenWithCandidate) => this.resumeServed(served, evenWithCandidate),
      stopping: () => ['stopping', 'stopped'].includes(this.machine.current.name),
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

  /** Readiness and what it rests on; reads only. */
  health(): HealthReport {
    const now = this.options.clock.now();
    const report = this.health_.report(this.machine.current, now);
    report.warnings.push(...(this.logWatch?.warnings() ?? []));
    return this.keys.joinedTo(this.replays?.joinedTo(report) ?? report, now);
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
    // off the lag's path: a broker slow to describe its topics holds up no lag measure
    this.logWatch?.checkInBackground(Object.values(this.options.topics), ends);
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
    if (state.name === 'catching_up_candidate') {
      this.machine.moveTo(candidateMeasured(state, ends, now, this.options, this.health_));
    } else if (state.name === 'catching_up' || state.name === 'live') {
      const lag = this.health_.totalLag();
      const name = lag !== null && lag <= this.options.readyMaxLag ? 'live' : 'catching_up';
      this.machine.moveTo({ name, served: state.served });
      if (name === 'catching_up' && lag !== null && state.served.currentVersion)
        this.replays?.lagMeasured(state.served, lag, modelEnds, now);
    }
    this.replays?.abortIfStalled(now);
  }

  /** Gives the served model its projector back, unless it is no longer served or it runs already. */
  private resumeServed(served: Generation, evenWithCandidate: boolean): void {
    const state = this.machine.current;
    if (state.served !== served || served.isProjecting()) return;
    if (isServing(state) || (evenWithCandidate && state.name === 'catching_up_candidate'))
      this.project(served, this.options.groupId);
  }

  private proposals(): void {
    const state = this.machine.current;
    if (!isServing(state) && state.name !== 'catching_up_candidate') return;
    const next = this.candidates.next(
      state.served,
      candidateOf(state),
      state.name === 'catching_up_candidate' ? state.lock : null,
    );
    if (next !== null) this.adopt(next.candidate, next.lock);
  }

  private adopt(candidate: Generation, lock: ReleaseLock | null): void {
    const served = this.machine.current.served;
    candidate.setGiveWay(true);
    this.machine.moveTo({ name: 'catching_up_candidate', served, candidate, gainMark: null, lock });
    this.project(candidate, `${this.options.groupId}.candidate.${this.options.clock.now()}`);
    // A candidate ahead of the served model already (a catch-up replay's) is switched to at once,
    // without waiting for a batch of its own.
    void this.maybeSwitch();
  }

  private async switchIfReached(): Promise<void> {
    const switched = await switchIfReached(this.machine, this.switching);
    if (switched === null) return;
    if (switched.next.served !== switched.previous) this.view.retire(switched.previous);
    if (isServing(switched.next)) void this.checkLag().catch(() => undefined);
  }

  private async stopAll(): Promise<void> {
    const state = this.machine.current;
    if (state.name === 'stopping' || state.name === 'stopped') return;
    const { served } = state;
    const candidate = candidateOf(state);
    const lock = state.name === 'catching_up_candidate' ? state.lock : null;
    this.machine.moveTo({ name: 'stopping', served, candidate, lock });
    await Promise.all([
      this.replays?.abort(),
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

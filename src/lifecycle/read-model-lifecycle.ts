/**
 * The lifecycle of the served read model, as one state machine with one queue: lag checks,
 * proposal checks, projector events, switches and stop are commands handled one at a time, each
 * moving the state (`states.ts`) along the table. Reads for requests stay synchronous, outside the
 * queue. A replica never answers from a model older than one it has already answered from.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import type { PartitionEnds } from '../kafka/port.js';
import { readsOf, type ReadView } from '../read-model/read-view.js';
import type { ApiReads } from '../read-model/reader.js';
import { Candidates, paceCandidate } from './candidate.js';
import { Generation } from './generation.js';
import { startProjecting, type ProjectorContext } from './projector-events.js';
import { Health, type HealthReport } from './health.js';
import { Keys, type KeySource } from './keys.js';
import { LifecycleMachine } from './machine.js';
import type { LifecycleOptions } from './options.js';
import {
  candidateOf,
  isServing,
  type LifecycleState,
  type ReleaseLock,
  type ServiceState,
} from './states.js';
import { hasReachedAnswered, switchOver } from './switch.js';

export type { LifecycleEvents, LifecycleOptions } from './options.js';
export type { HealthReport };

export class ReadModelLifecycle {
  private readonly machine: LifecycleMachine;
  private readonly stopRequested = new AbortController();
  private readonly health_: Health;
  private readonly keys: Keys;
  private readonly candidates: Candidates;
  private readonly projectors: ProjectorContext;

  /**
   * What the API answers from: the served model, and keys from whichever model has read furthest on
   * the keys topic. Worked out again whenever either may change (a move of the state, a committed
   * batch of the keys topic, the keys watch), and published to the request threads as it changes.
   */
  private view: {
    seq: number;
    served: Generation;
    keys: KeySource;
    reads: { served: ApiReads; keys: Pick<ApiReads, 'orgOfKeyHash'> };
  } | null = null;
  /** generations switched away from, closed and deleted once no request thread reads them */
  private readonly retiring = new Set<Promise<void>>();

  /** What the HTTP API of this thread reads (`readView()` for the others). */
  readonly reads: ApiReads = readsOf(() => (this.view ?? this.refreshView()).reads);

  constructor(private readonly options: LifecycleOptions) {
    const { logger, clock, startKeysWatch } = options;
    this.machine = new LifecycleMachine({ ...options, moved: () => this.refreshView() });
    this.health_ = new Health(options);
    this.candidates = new Candidates(options);
    this.keys = new Keys({
      apiKeysTopic: options.topics.apiKeys,
      logger,
      post: (command) => this.machine.send('keys watch', command),
      changed: () => this.refreshView(),
      ...(startKeysWatch === undefined
        ? {}
        : {
            startKeysWatch: () =>
              startKeysWatch(`${options.groupId}.keys.${clock.now()}`, () => this.refreshView()),
          }),
    });
    this.projectors = {
      machine: this.machine,
      health: this.health_,
      clock,
      deps: {
        startProjector: options.startProjector,
        clock,
        logger,
        apiKeysTopic: options.topics.apiKeys,
        keysMoved: () => this.refreshView(),
        ...(options.backoff === undefined ? {} : { backoff: options.backoff }),
      },
      ...(options.events === undefined ? {} : { events: options.events }),
      candidateMoved: () => void this.maybeSwitch(),
    };
  }

  private get current(): LifecycleState {
    return this.machine.current;
  }

  /** Opens the served model (creating the first one), adopts a proposed candidate, and starts the projectors. */
  start(): void {
    if (this.machine.started()) return;
    const { files, logger } = this.options;
    const served = Generation.openServed(files, logger);
    this.machine.begin({ name: 'starting', served });
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
    const view = this.view ?? this.refreshView();
    return { seq: view.seq, served: view.served.ref(), keys: view.keys.ref };
  }

  state(): ServiceState {
    return this.machine.name();
  }

  servedFile(): string {
    return this.current.served.file;
  }

  /** The served model's running projector (diagnostics and tests); null while none runs. */
  servedProjector(): ReturnType<Generation['projector']> {
    return this.current.served.projector();
  }

  candidateFile(): string | null {
    return candidateOf(this.current)?.file ?? null;
  }

  /** Readiness and what it rests on; reads only. */
  health(): HealthReport {
    return this.health_.report(this.current, this.options.clock.now());
  }

  /**
   * Measures the served model's lag (end offset − stored position per partition), restarts a
   * projector that lags without moving for longer than the stall timeout, and paces a candidate.
   * The end offsets are asked for outside the queue: a broker that does not answer holds up no command.
   */
  async checkLag(): Promise<void> {
    if (!this.machine.started() || this.stopRequested.signal.aborted) return;
    const ends = await this.options.endOffsets(Object.values(this.options.topics));
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
    const state = this.current;
    if (state.name === 'stopping' || state.name === 'stopped') return;
    const now = this.options.clock.now();
    const partitions = this.health_.measured(ends, state.served, candidateOf(state), now);
    this.options.events?.lagMeasured?.(partitions);
    if (state.name === 'rebuilding') {
      const ratio = this.health_.progressOf(state.candidate);
      if (ratio !== null) this.options.events?.candidateProgress?.(ratio);
      const gainMark = paceCandidate(state, ends, now, {
        readyMaxLag: this.options.readyMaxLag,
        windowMs: this.options.candidateGainWindowMs ?? 30_000,
        logger: this.options.logger,
      });
      this.machine.moveTo({ ...state, gainMark });
    } else if (state.name === 'catching_up' || state.name === 'live') {
      const lag = this.health_.totalLag();
      this.machine.moveTo({
        name: lag !== null && lag <= this.options.readyMaxLag ? 'live' : 'catching_up',
        served: state.served,
      });
    }
  }

  private proposals(): void {
    const state = this.current;
    if (!isServing(state) && state.name !== 'rebuilding') return;
    const candidate = candidateOf(state);
    const lock = state.name === 'rebuilding' ? state.lock : null;
    const proposal = this.candidates.proposal(state.served, candidate);
    if (proposal !== null) {
      if (candidate !== null) this.candidates.retire(candidate);
      this.adopt(proposal, lock);
      this.options.logger.info(
        { file: proposal.file, served: state.served.file },
        'catching up a proposed model before serving it',
      );
    } else if (candidate === null && !state.served.currentVersion) {
      const rebuild = this.candidates.versionRebuild();
      if (rebuild !== null) this.adopt(rebuild.candidate, rebuild.lock);
    }
    this.keys.tend(!state.served.currentVersion);
  }

  private adopt(candidate: Generation, lock: ReleaseLock | null): void {
    const served = this.current.served;
    candidate.setGiveWay(true);
    this.machine.moveTo({ name: 'rebuilding', served, candidate, gainMark: null, lock });
    this.project(candidate, `${this.options.groupId}.candidate.${this.options.clock.now()}`);
  }

  private async switchIfReached(): Promise<void> {
    const state = this.current;
    if (state.name !== 'rebuilding') return;
    if (!hasReachedAnswered(state.candidate, state.served.positions(), this.keys)) return;
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
      keys: this.keys,
      health: this.health_,
      stopRequested: this.stopRequested.signal,
      resumeServed: (served) => this.project(served, this.options.groupId),
      ...(events?.switched === undefined ? {} : { switched: events.switched }),
    });
    this.machine.moveTo(next);
    if (next.served !== state.served) this.retire(state.served);
    if (isServing(next)) void this.checkLag().catch(() => undefined);
  }

  /** Closes and deletes a generation switched away from, once no request thread reads it. */
  private retire(previous: Generation): void {
    const retired = (async () => {
      await this.options.views?.settled();
      // Reads are synchronous: once this tick ends, no request of this thread holds the connection.
      await new Promise((resolve) => setImmediate(resolve));
      previous.close();
      this.options.files.remove(previous.file);
    })().catch((error: unknown) =>
      this.options.logger.error({ err: error, file: previous.file }, 'retiring a switched-from model failed'),
    );
    this.retiring.add(retired);
    void retired.finally(() => this.retiring.delete(retired));
  }

  /** Works out what the API answers from, and publishes it when that changed. */
  private refreshView(): NonNullable<typeof this.view> {
    const state = this.current;
    const last = this.view;
    // Stopping closes the models: the API answers from the last view until it has stopped.
    if (last !== null && (state.name === 'stopping' || state.name === 'stopped')) return last;
    const served = state.served;
    let keys: KeySource;
    try {
      keys = this.keys.sourceFor(served, candidateOf(state));
    } catch (error) {
      // Called from projectors' and the watch's reports too, where a throw would end the process:
      // the API keeps answering from the last view, worked out again at the next report.
      if (last === null) throw error;
      this.options.logger.error({ err: error }, 'working out where keys are looked up failed');
      return last;
    }
    if (last !== null && last.served === served && last.keys.ref.id === keys.ref.id) return last;
    const view = {
      seq: (last?.seq ?? 0) + 1,
      served,
      keys,
      reads: { served: served.reader, keys: keys.reader },
    };
    this.view = view;
    this.options.views?.publish(this.readView());
    return view;
  }

  private async stopAll(): Promise<void> {
    const state = this.current;
    if (state.name === 'stopping' || state.name === 'stopped') return;
    const { served } = state;
    const candidate = candidateOf(state);
    const lock = state.name === 'rebuilding' ? state.lock : null;
    this.machine.moveTo({ name: 'stopping', served, candidate, lock });
    await Promise.all([
      served.stopProjecting(),
      candidate?.stopProjecting(),
      this.keys.stop(),
      ...this.retiring,
    ]);
    served.close();
    candidate?.close();
    lock?.();
    this.machine.moveTo({ name: 'stopped', served });
  }
}

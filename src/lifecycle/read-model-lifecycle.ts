/**
 * The lifecycle of the served read model: its supervised projector, the lag and stall checks, and
 * candidates (a rebuild proposed through `NEXT`, or this process's own rebuild after a projection
 * version change) caught up in worker threads and switched to only once they have reached the
 * served model on every partition. A replica never answers from a model older than one it has
 * already answered from.
 */
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import type { TopicRole } from '../../schemas/events.js';
import { type PartitionEnds, type UnreadableBatch, offsetKey, type Positions } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openReadModel } from '../read-model/database.js';
import { RebuildLocked, type ModelFiles } from '../read-model/files.js';
import type { ApiReads } from '../read-model/reader.js';
import { type BatchOutcome } from '../read-model/writer.js';
import type { Clock } from './clock.js';
import { distanceTo, hasReached, openGeneration, positionsOf, type Generation } from './generations.js';
import type { KeysWatch } from '../consumer/keys-watch.js';
import { givesWay, setGiveWay } from '../shared-flags.js';
import type { StartProjector } from '../consumer/projector-handle.js';
import { lagOf, readiness, totalLag, type LagSnapshot, type PartitionLag } from './readiness.js';
import { serviceState, ServiceStateMachine, type ServiceState } from './state.js';
import { Supervisor, type Backoff, type RestartReason, type SupervisorStatus } from './supervisor.js';

export interface HealthReport {
  ready: boolean;
  reasons: string[];
  state: ServiceState;
  file: string;
  projectionVersion: number;
  rebuilding: boolean;
  candidate: { file: string; progress: number | null } | null;
  projector: SupervisorStatus | null;
  totalLag: number | null;
  partitions: PartitionLag[];
}

/** What the lifecycle reports as it goes; the service turns it into metrics. */
export interface LifecycleEvents {
  batchApplied?: (outcome: BatchOutcome) => void;
  restarted?: (projector: 'served' | 'candidate', reason: RestartReason) => void;
  lagMeasured?: (partitions: PartitionLag[]) => void;
  candidateProgress?: (ratio: number) => void;
  unreadable?: (batch: UnreadableBatch) => void;
  switched?: (from: string, to: string) => void;
  stateChanged?: (from: ServiceState, to: ServiceState, allowed: boolean) => void;
}

export interface LifecycleOptions {
  files: ModelFiles;
  topics: Record<TopicRole, string>;
  groupId: string;
  startProjector: StartProjector;
  endOffsets: (topics: readonly string[]) => Promise<PartitionEnds[]>;
  clock: Clock;
  logger: Logger;
  readyMaxLag: number;
  stallTimeoutMs: number;
  backoff?: Backoff;
  events?: LifecycleEvents;
  /** the keys topic alone, read in this thread while the served model gets no events (a version rebuild) */
  startKeysWatch?: (groupId: string) => Promise<KeysWatch>;
  /** a candidate that gains less than a tenth of its distance to the served model over this long stops giving way (default 30 s) */
  candidateGainWindowMs?: number;
}

/** A candidate's distance to the served model at the start of a window (`paceCandidate`). */
interface GainMark {
  distance: number;
  at: number;
}

interface StallWatch {
  signature: string;
  movedAt: number;
  /** since when the model has lagged without its position moving; null when not lagging */
  stalledSince: number | null;
}

export class ReadModelLifecycle {
  private served!: Generation;
  private candidate: Generation | null = null;
  /** the candidate's distance to the served model when last marked (`paceCandidate`) */
  private gainMark: GainMark | null = null;
  /** releases the rebuild lock this process holds for its own version rebuild */
  private releaseLock: (() => void) | null = null;
  private lag: LagSnapshot | null = null;
  private keysWatch: KeysWatch | null = null;
  private keysWatchStarting = false;
  /** partitions of the served model stopped at a batch the client cannot read, until one is read */
  private readonly unreadable = new Map<string, UnreadableBatch & { at: number }>();
  private readonly stall = new Map<Generation, StallWatch>();
  private switching = false;
  private stopping = false;
  private stopped = false;
  private started = false;
  private readonly machine: ServiceStateMachine;
  private readonly apiKeysTopic: string;

  /** What the HTTP API reads: the served model, and keys from whichever model has read furthest on the keys topic. */
  readonly reads: ApiReads = {
    orderPage: (query) => this.served.reader.orderPage(query),
    articlesOfOrder: (orgId, orderId) => this.served.reader.articlesOfOrder(orgId, orderId),
    orgOfKeyHash: (hash) => this.keysReader().orgOfKeyHash(hash),
    orgChanges: (orgId) => this.served.reader.orgChanges(orgId),
    orderChanges: (orderId) => this.served.reader.orderChanges(orderId),
    modelIdentity: () => this.served.reader.modelIdentity(),
  };

  constructor(private readonly options: LifecycleOptions) {
    this.apiKeysTopic = options.topics.apiKeys;
    this.machine = new ServiceStateMachine((from, to, allowed) => {
      const log = allowed
        ? options.logger.info.bind(options.logger)
        : options.logger.error.bind(options.logger);
      log(
        { from, to, allowed },
        allowed
          ? 'service state changed'
          : 'service state changed by a transition the lifecycle does not allow',
      );
      options.events?.stateChanged?.(from, to, allowed);
    });
  }

  /** Opens the served model (creating the first one), adopts a proposed candidate, and starts the projectors. */
  start(): void {
    const { files, logger } = this.options;
    let current = files.currentFile();
    if (current === null) {
      current = files.newGenerationFile();
      openReadModel(current).close();
      files.promote(current);
      logger.info({ file: current }, 'created an empty read model');
    }
    this.served = openGeneration(current);
    if (this.served.currentVersion) {
      this.served.supervisor = this.supervise(this.served, this.options.groupId, 'served');
    } else {
      logger.warn(
        { file: current, expected: PROJECTION_VERSION },
        'the served model is of an older projection version',
      );
    }
    this.started = true;
    this.checkProposals();
    this.refreshState();
  }

  state(): ServiceState {
    return this.machine.state;
  }

  servedFile(): string {
    return this.served.file;
  }

  /** The served model's running projector (diagnostics and tests); null while none runs. */
  servedProjector(): ReturnType<Supervisor['running']> {
    return this.served.supervisor?.running() ?? null;
  }

  candidateFile(): string | null {
    return this.candidate?.file ?? null;
  }

  health(): HealthReport {
    this.refreshState();
    const now = this.options.clock.now();
    const projector = this.served.supervisor?.status() ?? null;
    const verdict = readiness({
      now,
      state: this.machine.state,
      servedIsCurrentVersion: this.served.currentVersion,
      projector,
      lag: this.lag,
      stalledSince: this.stall.get(this.served)?.stalledSince ?? null,
      unreadable: [...this.unreadable.values()],
      readyMaxLag: this.options.readyMaxLag,
      stallTimeoutMs: this.options.stallTimeoutMs,
    });
    return {
      ...verdict,
      state: this.machine.state,
      file: this.served.file,
      projectionVersion: PROJECTION_VERSION,
      rebuilding: this.candidate !== null,
      candidate:
        this.candidate === null ? null : { file: this.candidate.file, progress: this.candidateRatio() },
      projector,
      totalLag: totalLag(this.lag),
      partitions: this.lag?.partitions ?? [],
    };
  }

  /**
   * Measures the served model's lag (end offset − stored position per partition), restarts a
   * projector that lags without moving for longer than the stall timeout, and reports progress.
   */
  async checkLag(): Promise<void> {
    if (!this.started || this.stopping) return;
    const ends = await this.options.endOffsets(Object.values(this.options.topics));
    const now = this.options.clock.now();
    this.lag = { at: now, partitions: lagOf(ends, positionsOf(this.served)) };
    this.options.events?.lagMeasured?.(this.lag.partitions);
    this.watchStall(this.served, this.lag.partitions, now);
    if (this.candidate !== null) {
      const candidateLag = lagOf(ends, positionsOf(this.candidate));
      this.watchStall(this.candidate, candidateLag, now);
      this.lastEnds = ends;
      const ratio = this.candidateRatio();
      if (ratio !== null) this.options.events?.candidateProgress?.(ratio);
      this.paceCandidate(this.candidate, ends, now);
    }
    this.refreshState();
  }

  /**
   * A candidate gives way to requests only while that costs nothing but time: once it is within
   * READY_MAX_LAG messages of the served model, or when it has gained less than a tenth of its
   * distance to it over a window (the served model takes events about as fast as the candidate
   * applies them at its share), it runs at full speed until it is served. Otherwise a replica under
   * steady ingest and requests could take hours to switch, or never.
   */
  private paceCandidate(candidate: Generation, ends: readonly PartitionEnds[], now: number): void {
    if (!givesWay(candidate.giveWay) || candidate.supervisor?.running() == null) return;
    const logStarts = new Map(ends.map((end) => [offsetKey(end.topic, end.partition), end.start]));
    const distance = distanceTo(positionsOf(candidate), positionsOf(this.served), logStarts);
    const windowMs = this.options.candidateGainWindowMs ?? 30_000;
    let why: string | null = null;
    if (distance <= this.options.readyMaxLag) {
      why = 'it is within READY_MAX_LAG of the served model';
    } else if (this.gainMark === null) {
      this.gainMark = { distance, at: now };
    } else if (now - this.gainMark.at >= windowMs) {
      if (distance > this.gainMark.distance * 0.9) {
        why = `it gained less than a tenth of its distance to the served model in ${windowMs} ms`;
      }
      this.gainMark = { distance, at: now };
    }
    if (why === null) return;
    setGiveWay(candidate.giveWay, false);
    this.options.logger.info(
      { file: candidate.file, distance },
      `the candidate stops giving way to requests: ${why}`,
    );
  }

  private lastEnds: PartitionEnds[] | null = null;

  private candidateRatio(): number | null {
    if (this.candidate === null || this.lastEnds === null) return null;
    const positions = positionsOf(this.candidate);
    let done = 0;
    let total = 0;
    for (const end of this.lastEnds) {
      const at = positions.get(offsetKey(end.topic, end.partition)) ?? end.start;
      total += end.end - end.start;
      done += Math.max(0, Math.min(at, end.end) - end.start);
    }
    return total === 0 ? 1 : done / total;
  }

  private watchStall(generation: Generation, partitions: PartitionLag[], now: number): void {
    const supervisor = generation.supervisor;
    if (supervisor === null) return;
    const signature = partitions.map((p) => p.nextOffset).join(',');
    const lagging = partitions.some((p) => p.lag > 0);
    const watch = this.stall.get(generation) ?? { signature, movedAt: now, stalledSince: null };
    if (watch.signature !== signature || supervisor.running() === null) {
      watch.signature = signature;
      watch.movedAt = now;
    }
    watch.stalledSince = lagging ? watch.movedAt : null;
    this.stall.set(generation, watch);
    if (lagging && now - watch.movedAt > this.options.stallTimeoutMs) {
      this.options.logger.warn(
        { file: generation.file, lag: partitions.filter((p) => p.lag > 0) },
        'projector stalled while lagging; restarting it',
      );
      watch.movedAt = now;
      supervisor.restart('stalled');
    }
  }

  /**
   * Looks at `NEXT`: adopts a newly proposed candidate, and starts this process's own rebuild when
   * the served model is of an older projection version and nothing else is being built.
   */
  checkProposals(): void {
    if (!this.started || this.stopping || this.switching) return;
    const { files, logger } = this.options;
    const proposed = files.nextFile();
    if (proposed !== null && proposed !== this.served.file && proposed !== this.candidate?.file) {
      const candidate = this.tryOpen(proposed);
      if (candidate !== null) {
        this.retireCandidate();
        this.adopt(candidate);
        logger.info(
          { file: proposed, served: this.served.file },
          'catching up a proposed model before serving it',
        );
      }
    } else if (proposed === this.served.file) {
      files.clearNext(proposed);
    }
    if (this.candidate === null && !this.served.currentVersion) this.startVersionRebuild();
    this.tendKeysWatch();
  }

  private ignoredProposals = new Set<string>();
  private waitingForLock = false;

  private tryOpen(file: string): Generation | null {
    if (this.ignoredProposals.has(file)) return null;
    try {
      const generation = openGeneration(file);
      if (generation.currentVersion) return generation;
      generation.db.close();
      this.options.logger.error(
        { file, expected: PROJECTION_VERSION },
        'the proposed model is of another projection version; it is not served (rebuild it with this version)',
      );
    } catch (error) {
      this.options.logger.error(
        { err: error, file },
        'the proposed model cannot be opened; it is not served',
      );
    }
    this.ignoredProposals.add(file);
    return null;
  }

  private startVersionRebuild(): void {
    const { files, logger } = this.options;
    try {
      this.releaseLock = files.acquireRebuildLock(`version ${PROJECTION_VERSION} rebuild by the service`);
    } catch (error) {
      if (!(error instanceof RebuildLocked)) throw error;
      if (!this.waitingForLock)
        logger.warn({ reason: error.message }, 'the version rebuild waits for the running rebuild');
      this.waitingForLock = true;
      return;
    }
    this.waitingForLock = false;
    const file = files.newGenerationFile();
    openReadModel(file).close();
    files.proposeNext(file);
    logger.info(
      { file, projectionVersion: PROJECTION_VERSION },
      'rebuilding the model for this projection version',
    );
    this.adopt(openGeneration(file));
  }

  private adopt(candidate: Generation): void {
    const groupId = `${this.options.groupId}.candidate.${this.options.clock.now()}`;
    setGiveWay(candidate.giveWay, true);
    this.gainMark = null;
    candidate.supervisor = this.supervise(candidate, groupId, 'candidate');
    this.candidate = candidate;
    this.refreshState();
  }

  /** Stops and deletes a candidate superseded by a newer proposal: this process retires it. */
  private retireCandidate(): void {
    const old = this.candidate;
    if (old === null) return;
    this.candidate = null;
    const retire = async (): Promise<void> => {
      await old.supervisor?.stop();
      old.db.close();
      this.options.files.removeGeneration(old.file);
      this.options.logger.info({ file: old.file }, 'retired a candidate superseded by a newer proposal');
    };
    retire().catch((error: unknown) =>
      this.options.logger.error({ err: error, file: old.file }, 'retiring a superseded candidate failed'),
    );
  }

  private supervise(generation: Generation, groupId: string, role: 'served' | 'candidate'): Supervisor {
    const supervisor = new Supervisor({
      name: role,
      clock: this.options.clock,
      logger: this.options.logger,
      ...(this.options.backoff === undefined ? {} : { backoff: this.options.backoff }),
      start: (signal) =>
        this.options.startProjector({
          signal,
          file: generation.file,
          groupId,
          giveWay: generation.giveWay,
          onBatch: (topic, partition, outcome) => this.batchApplied(generation, topic, partition, outcome),
          onUnreadable: (batch) => {
            this.options.events?.unreadable?.(batch);
            if (generation === this.served) {
              this.unreadable.set(offsetKey(batch.topic, batch.partition), {
                ...batch,
                at: this.options.clock.now(),
              });
            }
          },
        }),
      onRestart: (reason) => {
        this.options.events?.restarted?.(generation === this.served ? 'served' : 'candidate', reason);
        // A new projector reports again what it cannot read; an old report may name a batch an
        // operator has moved past since (skip-batch), with an outdated command.
        if (generation === this.served) this.unreadable.clear();
        this.refreshState();
      },
    });
    supervisor.start();
    return supervisor;
  }

  private batchApplied(
    generation: Generation,
    topic: string,
    partition: number,
    outcome: BatchOutcome,
  ): void {
    if (generation === this.served) this.unreadable.delete(offsetKey(topic, partition));
    // The batch is committed: a reader must look keys up again to see issues and revocations, and
    // read change counters again for its entity tags.
    if (topic === this.apiKeysTopic) generation.reader.forgetKeys();
    generation.reader.forgetChanges();
    if (generation === this.served) {
      this.options.events?.batchApplied?.(outcome);
      this.refreshState();
    } else if (generation === this.candidate) {
      this.maybeSwitch().catch((error: unknown) =>
        this.options.logger.error({ err: error }, 'switching to the caught-up model failed; trying again'),
      );
    }
  }

  /**
   * Keys are looked up in whichever model has read furthest on the keys topic, so an issue or a
   * revocation counts as soon as any of them has applied it: the served model, the candidate, or,
   * while the served model gets no events, the keys watch.
   */
  private keysReader(): Pick<Generation['reader'], 'orgOfKeyHash'> {
    const served = positionsOf(this.served);
    const topic = this.apiKeysTopic;
    let best: { positions: Positions; reader: Pick<Generation['reader'], 'orgOfKeyHash'> } = {
      positions: served,
      reader: this.served.reader,
    };
    const others = [
      ...(this.candidate === null
        ? []
        : [{ positions: positionsOf(this.candidate), reader: this.candidate.reader }]),
      ...(this.keysWatch === null ? [] : [{ positions: this.keysWatch.positions(), reader: this.keysWatch }]),
    ];
    for (const other of others) {
      if (hasReached(other.positions, best.positions, topic)) best = other;
    }
    return best.reader;
  }

  /** Keeps the keys watch running while the served model is of an older version; stops it otherwise. */
  private tendKeysWatch(): void {
    const start = this.options.startKeysWatch;
    if (start === undefined || this.served.currentVersion || this.stopping) {
      const watch = this.keysWatch;
      this.keysWatch = null;
      if (watch !== null) this.endKeysWatch(watch);
      return;
    }
    if (this.keysWatch !== null || this.keysWatchStarting) return;
    this.keysWatchStarting = true;
    start(`${this.options.groupId}.keys.${this.options.clock.now()}`)
      .then((watch) => {
        if (this.stopping || this.served.currentVersion) {
          this.endKeysWatch(watch);
          return;
        }
        // It outlives its consumer's failures (it resumes from its own positions), so that the keys
        // it has answered are never forgotten while it is needed.
        this.keysWatch = watch;
      })
      .catch((error: unknown) =>
        this.options.logger.warn({ err: error }, 'the keys watch did not start; it is tried again'),
      )
      .finally(() => (this.keysWatchStarting = false));
  }

  private endKeysWatch(watch: KeysWatch): void {
    watch
      .stop()
      .catch((error: unknown) => this.options.logger.warn({ err: error }, 'stopping the keys watch failed'));
  }

  /**
   * Serves the candidate once it has reached the served model on every partition: stops the served
   * projector so its position is final, waits until the candidate has reached that too, then swaps.
   * The candidate's projector goes on as the served one's.
   */
  async maybeSwitch(): Promise<void> {
    const candidate = this.candidate;
    if (candidate === null || this.switching || this.stopping) return;
    if (!this.hasReachedAnswered(candidate, positionsOf(this.served))) return;
    this.switching = true;
    // The served model gets no events until the swap: the last few batches run at full speed, and
    // so does the candidate from now on if the switch has to wait.
    setGiveWay(candidate.giveWay, false);
    this.refreshState();
    const previous = this.served;
    try {
      const stoppedProjector = previous.supervisor !== null;
      await previous.supervisor?.stop();
      // What the served file holds once nothing writes to it: the mark the candidate must reach.
      const final: Positions = previous.storedPositions();
      previous.supervisor = null;
      // The candidate is at most a few batches behind the final positions; if it does not get there
      // within the stall timeout, the served model gets its projector back and the switch waits.
      const deadline = this.options.clock.now() + this.options.stallTimeoutMs;
      // Checked again right before the swap, with no await in between: the keys watch moves on.
      let reached = this.hasReachedAnswered(candidate, final);
      while (!reached && !this.isStopping() && this.options.clock.now() < deadline) {
        await this.options.clock.sleep(20);
        reached = this.hasReachedAnswered(candidate, final);
      }
      if (!reached || this.isStopping()) {
        if (stoppedProjector && !this.isStopping()) {
          previous.supervisor = this.supervise(previous, this.options.groupId, 'served');
          this.options.logger.warn(
            { candidate: candidate.file },
            'the candidate did not reach the served model in time; serving and projecting the current one meanwhile',
          );
        }
        return;
      }
      this.options.files.promote(candidate.file);
      this.options.files.clearNext(candidate.file);
      this.served = candidate;
      this.candidate = null;
      this.unreadable.clear();
      this.tendKeysWatch();
      this.lag = null;
      this.releaseLock?.();
      this.releaseLock = null;
      this.stall.delete(previous);
      this.options.logger.info(
        { from: previous.file, to: candidate.file },
        'switched to the caught-up model',
      );
      this.options.events?.switched?.(previous.file, candidate.file);
      // Reads are synchronous: once this tick ends, no request holds the retired connection.
      setImmediate(() => {
        previous.db.close();
        this.options.files.removeGeneration(previous.file);
      });
    } catch (error) {
      // Nothing was swapped: keep serving, and projecting into, the current model.
      if (
        this.served === previous &&
        previous.supervisor === null &&
        previous.currentVersion &&
        !this.isStopping()
      ) {
        previous.supervisor = this.supervise(previous, this.options.groupId, 'served');
      }
      throw error;
    } finally {
      this.switching = false;
      this.refreshState();
    }
    void this.checkLag().catch(() => undefined);
  }

  /**
   * Whether `candidate` holds everything this replica may have answered from: the served model's
   * `served` positions and, while a keys watch runs, the keys the watch has read (an issue or a
   * revocation answered from the watch must not be forgotten when the watch stops at the swap).
   */
  private hasReachedAnswered(candidate: Generation, served: Positions): boolean {
    const positions = positionsOf(candidate);
    return (
      hasReached(positions, served) &&
      (this.keysWatch === null || hasReached(positions, this.keysWatch.positions()))
    );
  }

  /** Read through a call: the flag changes while this object awaits. */
  private isStopping(): boolean {
    return this.stopping;
  }

  private refreshState(): void {
    if (!this.started && !this.stopped) return;
    const status = this.served.supervisor?.status() ?? null;
    this.machine.update(
      serviceState({
        stopping: this.stopping,
        stopped: this.stopped,
        switching: this.switching,
        candidate: this.candidate !== null,
        projectorRunning:
          status === null ? null : status.running ? true : status.retryAt === null ? null : false,
        totalLag: totalLag(this.lag),
        readyMaxLag: this.options.readyMaxLag,
      }),
    );
  }

  /** Stops every projector and closes the models. A candidate stays proposed in `NEXT` for the next start. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.refreshState();
    const candidate = this.candidate;
    const watch = this.keysWatch;
    this.keysWatch = null;
    await Promise.all([this.served.supervisor?.stop(), candidate?.supervisor?.stop(), watch?.stop()]);
    this.served.db.close();
    candidate?.db.close();
    this.releaseLock?.();
    this.stopped = true;
    this.refreshState();
  }
}

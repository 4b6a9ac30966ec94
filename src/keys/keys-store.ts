/**
 * The keys store: one file per data directory (`keys-v<KEYS_STORE_VERSION>.sqlite`, its own schema
 * and version in `projections/keys/`), fed by the keys topic's own consumer, which commits each
 * batch's effects and its positions in one transaction (synchronous = FULL). It only moves forward:
 * no rebuild, switch, snapshot or projection version of the orders model touches it, and it is
 * replaced only by a successor of a new keys store version once that has reached it on every
 * partition. Every request thread answers keys from it (`key-lookup.ts`).
 *
 * Its consumer joins a group of its own at every start, so no membership a killed process left can
 * keep a partition from it; the positions live in SQLite. A watchdog restarts a consumer that has
 * not fetched for `stallMs`, and a start that takes longer than `keysStartTimeoutMs` is given up and
 * tried again, whatever the client's own retry schedule.
 */
import type { RunningProjector } from '../projector/projector-handle.js';
import {
  groupOfStart,
  offsetKey,
  type PartitionEnds,
  type Positions,
  type UnreadableBatch,
} from '../kafka/port.js';
import { lagOf, type LagMeasure, type PartitionLag } from '../supervision/lag.js';
import { Supervisor } from '../supervision/supervisor.js';
import { newCommitCounter } from '../read-model/commit-counter.js';
import type { BatchOutcome } from '../read-model/writer.js';
import { KeyLookup, type KeysRef } from './key-lookup.js';
import {
  hasReachedAll,
  keysFile,
  openKeysFiles,
  retirePredecessor,
  seedRefusedSuccessor,
  storedPositions,
} from './keys-files.js';
import { keysReadiness } from './keys-readiness.js';
import {
  keysBackoff,
  keysFetchMaxWaitMs,
  keysPatienceMs,
  keysStartTimeoutMs,
  keysStoreRoles,
  type KeysStoreOptions,
} from './keys-options.js';

export { keysFile };
export type { KeysStoreOptions };

let lastRefId = 0;

export class KeysStore {
  readonly file: string;
  private predecessor: { file: string; positions: Positions } | null = null;
  private lookup_: KeyLookup;
  private ref_: KeysRef;
  private supervisor: Supervisor | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  /** when the consumer last proved it reads: a fetch came back */
  private fetchedAt: number | null = null;
  /** when the running consumer started: the watchdog gives it `stallMs` to fetch */
  private startedAt: number | null = null;
  private lag: LagMeasure | null = null;
  private readonly unreadable = new Map<string, UnreadableBatch & { at: number }>();
  private readonly retiring = new Set<Promise<void>>();
  private starts = 0;
  /** consumers replaced in a row without a fetch: each next one is given twice as long (`patience`) */
  private stalls = 0;
  private readonly commits = newCommitCounter();

  constructor(private readonly options: KeysStoreOptions) {
    const files = openKeysFiles(options.dataDir, options.logger);
    this.file = files.file;
    this.predecessor = files.predecessor;
    this.ref_ = this.newRef();
    this.lookup_ = KeyLookup.open(this.ref_);
  }

  /** What this thread authenticates with. */
  lookup(): KeyLookup {
    return this.lookup_;
  }

  /** The files as request threads open them. */
  ref(): KeysRef {
    return this.ref_;
  }

  /** Starts the supervised consumer of the keys topic and its watchdog. */
  start(): void {
    if (this.supervisor !== null) return;
    const { clock, logger, stallMs } = this.options;
    // here, not at module level: a module-level constant is evaluated once, and its mutants never (docs/mutation.md)
    this.supervisor = new Supervisor({
      name: 'keys',
      clock,
      logger,
      backoff: this.options.backoff ?? keysBackoff,
      // a start is a worker thread, a connection and a group join: slower than a fetch under load
      startTimeoutMs: Math.max(keysStartTimeoutMs, stallMs),
      start: (signal) => {
        // before the consumer's thread opens the store: nothing else writes it meanwhile
        this.seedIfRefused();
        this.starts += 1;
        return this.options.startProjector({
          signal,
          file: this.file,
          groupId: groupOfStart(`${this.options.groupId}.keys`, clock.now(), this.starts),
          roles: keysStoreRoles,
          giveWay: new Int32Array(new SharedArrayBuffer(4)),
          fetchMaxWaitMs: keysFetchMaxWaitMs(stallMs),
          commits: this.commits,
          onFetched: () => {
            this.fetchedAt = clock.now();
            this.stalls = 0;
          },
          onBatch: (topic, partition, outcome) => this.applied(topic, partition, outcome),
          onUnreadable: (batch) => {
            this.unreadable.set(offsetKey(batch.topic, batch.partition), { ...batch, at: clock.now() });
          },
        });
      },
      onRunning: () => {
        this.startedAt = clock.now();
        this.unreadable.clear();
      },
      onRestart: (reason) => this.options.restarted?.(reason),
    });
    this.supervisor.start();
    this.watchdog = setInterval(() => this.watch(), Math.max(50, Math.min(500, stallMs / 4)));
    this.watchdog.unref();
  }

  /** The running consumer (diagnostics and tests); null while none runs. */
  projector(): RunningProjector | null {
    return this.supervisor?.running() ?? null;
  }

  /** Positions of the keys topic as committed with the store. */
  positions(): Positions {
    return this.supervisor?.running()?.positions() ?? storedPositions(this.file);
  }

  /** Records the keys topic's lag from the end offsets of a lag check. */
  measured(ends: readonly PartitionEnds[], now: number): PartitionLag[] {
    const partitions = lagOf(
      ends.filter((end) => end.topic === this.options.topics.apiKeys),
      this.positions(),
    );
    this.lag = { at: now, partitions };
    return partitions;
  }

  /** A readiness report of the orders model with the keys' reasons and partitions joined to it. */
  joinedTo<R extends { ready: boolean; reasons: string[]; partitions: PartitionLag[] }>(
    report: R,
    now: number,
  ): R {
    const reasons = this.reasons(now);
    return {
      ...report,
      ready: report.ready && reasons.length === 0,
      reasons: [...report.reasons, ...reasons],
      partitions: [...report.partitions, ...(this.lag?.partitions ?? [])],
    };
  }

  /** Why the keys keep the replica from being ready; empty when they do not. */
  reasons(now: number): string[] {
    return keysReadiness({
      now,
      lastReadAt: this.fetchedAt,
      consumer: this.supervisor?.status() ?? null,
      stallMs: this.options.stallMs,
      lag: this.lag,
      readyMaxLag: this.options.readyMaxLag,
      unreadable: [...this.unreadable.values()],
    });
  }

  async stop(): Promise<void> {
    if (this.watchdog !== null) clearInterval(this.watchdog);
    this.watchdog = null;
    await this.supervisor?.stop();
    this.supervisor = null;
    await Promise.all(this.retiring);
    this.lookup_.close();
  }

  private watch(): void {
    const running = this.supervisor?.running() ?? null;
    if (running === null || this.startedAt === null) return;
    // an empty keys topic brings no batch: the successor has reached its predecessor all the same
    this.succeedOnceReached(running.positions());
    const since = Math.max(this.fetchedAt ?? 0, this.startedAt);
    if (this.options.clock.now() - since > keysPatienceMs(this.options.stallMs, this.stalls)) {
      this.options.logger.warn(
        { stalledMs: this.options.clock.now() - since, stalls: this.stalls + 1 },
        'the keys consumer has not fetched for too long; starting a new one',
      );
      this.startedAt = null;
      this.stalls += 1;
      this.supervisor?.restart('stalled');
    }
  }

  private applied(topic: string, partition: number, outcome: BatchOutcome): void {
    this.fetchedAt = this.options.clock.now();
    this.unreadable.delete(offsetKey(topic, partition));
    this.options.batchApplied?.(outcome);
    this.succeedOnceReached(this.positions());
  }

  /** A successor refused for history the keys topic lost is seeded before its next start (`seedRefusedSuccessor`). */
  private seedIfRefused(): void {
    if (this.predecessor === null) return;
    seedRefusedSuccessor({
      file: this.file,
      predecessor: this.predecessor.file,
      keysTopic: this.options.topics.apiKeys,
      lastError: this.supervisor?.status().lastError ?? null,
      commits: this.commits,
      logger: this.options.logger,
    });
  }

  /** Once the successor has reached its predecessor on every partition, it answers alone. */
  private succeedOnceReached(positions: Positions): void {
    const predecessor = this.predecessor;
    if (predecessor === null || !hasReachedAll(positions, predecessor.positions)) return;
    this.predecessor = null;
    const previous = this.lookup_;
    this.ref_ = this.newRef();
    this.lookup_ = KeyLookup.open(this.ref_);
    this.options.changed?.();
    this.options.logger.info(
      { file: this.file, predecessor: predecessor.file },
      'the keys store has reached its predecessor; the predecessor is retired',
    );
    const retired = retirePredecessor(predecessor.file, previous, this.options);
    this.retiring.add(retired);
    void retired.finally(() => this.retiring.delete(retired));
  }

  private newRef(): KeysRef {
    lastRefId += 1;
    const predecessor = this.predecessor?.file ?? null;
    return { id: lastRefId, file: this.file, predecessor, commits: this.commits };
  }
}

/**
 * A generation: one model file opened for serving, with its reader, its give-way flag and its
 * projector's supervisor. It owns all of them; the lifecycle asks it to project, to stop projecting
 * and to close, and nothing outside assigns its fields.
 */
import { writeSql } from '../../projections/orders/sql.js';
import type { RunningProjector, StartProjector } from '../projector/projector-handle.js';
import { groupOfStart, offsetKey, type Positions, type UnreadableBatch } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openReadModel, ProjectionVersionMismatch, type ReadModelDatabase } from '../read-model/database.js';
import type { ModelFiles } from '../read-model/files.js';
import { newRefId, type ModelRef } from '../read-model/read-view.js';
import { ReadModelReader } from '../read-model/reader.js';
import { newCacheEpochs } from '../read-model/reader-caches.js';
import type { BatchOutcome } from '../read-model/writer.js';
import { givesWay, newGiveWayFlag, setGiveWay } from '../shared-flags.js';
import type { Clock } from '../supervision/clock.js';
import type { Backoff } from '../backoff.js';
import { Supervisor, type RestartReason, type SupervisorStatus } from '../supervision/supervisor.js';

/** What a generation needs to run a projector, and whom it tells what the projector does. */
export interface ProjectorDeps {
  startProjector: StartProjector;
  clock: Clock;
  logger: Logger;
  backoff?: Backoff;
}

export interface ProjectorEvents {
  batchApplied: (topic: string, partition: number, outcome: BatchOutcome) => void;
  unreadable: (batch: UnreadableBatch) => void;
  restarted: (reason: RestartReason) => void;
  running: () => void;
}

/** True when `candidate` has reached `served` on every partition `served` has read (of `topic` only, if given). */
export function hasReached(candidate: Positions, served: Positions, topic?: string): boolean {
  for (const [key, next] of served) {
    if (topic !== undefined && !key.endsWith(`:${topic}`)) continue;
    if ((candidate.get(key) ?? -1) < next) return false;
  }
  return true;
}

/**
 * Messages `candidate` still has to apply to reach `served` on every partition `served` has read;
 * a partition it has not read yet counts from its first offset in `logStarts` (0 when unknown).
 */
export function distanceTo(
  candidate: Positions,
  served: Positions,
  logStarts: ReadonlyMap<string, number>,
): number {
  let distance = 0;
  for (const [key, next] of served) {
    distance += Math.max(0, next - (candidate.get(key) ?? logStarts.get(key) ?? 0));
  }
  return distance;
}

export class Generation {
  /** its projector, null while none runs (an older version, stopped for a switch, or retired) */
  private supervisor: Supervisor | null = null;
  private readonly giveWayFlag = newGiveWayFlag(false);
  private readonly selectOffsets;

  private constructor(
    readonly file: string,
    readonly db: ReadModelDatabase,
    /** false for a file of an older projection version: served read-only, never projected into */
    readonly currentVersion: boolean,
    /** the topics an orders model is built from: a file of an older version may hold others */
    private readonly topics: ReadonlySet<string>,
  ) {
    this.reader = new ReadModelReader(db, {
      cacheChanges: currentVersion,
      epochs: this.cacheEpochs,
    });
    this.selectOffsets = db.prepare(writeSql.selectOffsets);
  }

  readonly reader: ReadModelReader;
  /** shared with the readers of this file in the request threads: a commit makes all of them forget */
  private readonly cacheEpochs = newCacheEpochs();
  private readonly refId = newRefId();

  /** The file as request threads open it (`read-model/read-view.ts`). */
  ref(): ModelRef {
    return {
      id: this.refId,
      file: this.file,
      currentVersion: this.currentVersion,
      epochs: this.currentVersion ? this.cacheEpochs : null,
    };
  }

  /**
   * Opens a model file for serving: migrates it first (before any reader opens it), then the API's
   * read-only connection. A file of another projection version opens read-only as it is.
   */
  static open(file: string, topics: ReadonlySet<string>): Generation {
    try {
      openReadModel(file).close();
      return new Generation(file, openReadModel(file, { readonly: true }), true, topics);
    } catch (error) {
      if (!(error instanceof ProjectionVersionMismatch)) throw error;
      const db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
      try {
        return new Generation(file, db, false, topics);
      } catch (unreadable) {
        // a version this code does not read (reader-statements.ts): refused, its connection closed
        db.close();
        throw unreadable;
      }
    }
  }

  /**
   * Opens the model `CURRENT` names, creating an empty first one only when there is no `CURRENT`.
   * A pointer naming no model file throws (PointerBroken) before anything is created.
   */
  static openServed(files: ModelFiles, logger: Logger, topics: ReadonlySet<string>): Generation {
    files.checkPointers();
    let file = files.currentFile();
    if (file === null) {
      file = files.newGenerationFile();
      openReadModel(file).close();
      files.promote(file);
      logger.info({ file }, 'created an empty read model');
    }
    return Generation.open(file, topics);
  }

  /** The positions stored in the file now, read through its API connection. */
  storedPositions(): Positions {
    const positions = new Map<string, number>();
    for (const row of this.selectOffsets.all() as {
      topic: string;
      partition: number;
      next_offset: number;
    }[]) {
      if (this.topics.has(row.topic)) positions.set(offsetKey(row.topic, row.partition), row.next_offset);
    }
    return positions;
  }

  /**
   * How far it has read: its running projector's positions, else those stored in its file. Never an
   * empty answer for a file that holds positions: before its projector's first start (the broker
   * down at a restart) a served model must not look as if it had read nothing.
   */
  positions(): Positions {
    return this.supervisor?.running()?.positions() ?? this.storedPositions();
  }

  projector(): RunningProjector | null {
    return this.supervisor?.running() ?? null;
  }

  /** Its projector's status; null while it has none. */
  projectorStatus(): SupervisorStatus | null {
    return this.supervisor?.status() ?? null;
  }

  isProjecting(): boolean {
    return this.supervisor !== null;
  }

  /** Whether its projector gives way to the API's requests (a candidate catching up). */
  givesWay(): boolean {
    return givesWay(this.giveWayFlag);
  }

  setGiveWay(on: boolean): void {
    setGiveWay(this.giveWayFlag, on);
  }

  /** Starts its supervised projector in groups named after `groupId` (nothing if one runs already). */
  project(groupId: string, name: string, deps: ProjectorDeps, events: ProjectorEvents): void {
    if (this.supervisor !== null) return;
    let starts = 0;
    this.supervisor = new Supervisor({
      name,
      clock: deps.clock,
      logger: deps.logger,
      ...(deps.backoff === undefined ? {} : { backoff: deps.backoff }),
      start: (signal) =>
        deps.startProjector({
          signal,
          file: this.file,
          groupId: groupOfStart(groupId, deps.clock.now(), ++starts),
          giveWay: this.giveWayFlag,
          onBatch: (topic, partition, outcome) => {
            // The batch is committed: the reader reads digests and the position again for its tags.
            // At once, outside the lifecycle's queue: a request after this must not be answered
            // from the cache.
            this.reader.forgetChanges();
            events.batchApplied(topic, partition, outcome);
          },
          onUnreadable: events.unreadable,
        }),
      onRestart: events.restarted,
      onRunning: events.running,
    });
    this.supervisor.start();
  }

  /** Stops its projector; true when one was running or retrying. */
  async stopProjecting(): Promise<boolean> {
    const supervisor = this.supervisor;
    if (supervisor === null) return false;
    await supervisor.stop();
    this.supervisor = null;
    return true;
  }

  /** Restarts a projector that lags without moving (the stall watchdog's remedy). */
  restartProjector(): void {
    this.supervisor?.restart('stalled');
  }

  close(): void {
    this.db.close();
  }
}

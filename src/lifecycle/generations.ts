/**
 * Generations: model files opened for serving. Monotonic serving rests on one comparison, made
 * here: a model may replace the served one only when its position has reached the served one's on
 * every partition.
 */
import { writeSql } from '../../projections/orders/sql.js';
import { newGiveWayFlag } from '../shared-flags.js';
import { openReadModel, ProjectionVersionMismatch, type ReadModelDatabase } from '../read-model/database.js';
import { ReadModelReader } from '../read-model/reader.js';
import type { Supervisor } from './supervisor.js';
import { offsetKey, type Positions } from '../kafka/port.js';

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

export interface Generation {
  file: string;
  db: ReadModelDatabase;
  reader: ReadModelReader;
  /** false for a file of an older projection version: served read-only, never projected into */
  currentVersion: boolean;
  /** its projector, null while none runs (old version, or retired) */
  supervisor: Supervisor | null;
  /** the positions stored in the file now, read through its API connection */
  storedPositions: () => Positions;
  /** set while it is a candidate: its projector gives way to the API's requests (`pacing.ts`) */
  giveWay: Int32Array;
}

/**
 * How far a generation has read: its running projector's positions, else those stored in its file.
 * Never an empty answer for a file that holds positions: before its projector's first start (the
 * broker down at a restart) a served model must not look as if it had read nothing, or any candidate
 * would seem to have reached it.
 */
export function positionsOf(generation: Generation): Positions {
  return generation.supervisor?.running()?.positions() ?? generation.storedPositions();
}

/**
 * Opens a generation for serving: migrates it first (before any reader opens it), then the API's
 * read-only connection. A file of another projection version opens read-only as it is.
 */
export function openGeneration(file: string): Generation {
  let currentVersion = true;
  let db: ReadModelDatabase;
  try {
    openReadModel(file).close();
    db = openReadModel(file, { readonly: true });
  } catch (error) {
    if (!(error instanceof ProjectionVersionMismatch)) throw error;
    currentVersion = false;
    db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
  }
  const selectOffsets = db.prepare(writeSql.selectOffsets);
  const storedPositions = (): Positions => {
    const positions = new Map<string, number>();
    for (const row of selectOffsets.all() as { topic: string; partition: number; next_offset: number }[]) {
      positions.set(offsetKey(row.topic, row.partition), row.next_offset);
    }
    return positions;
  };
  return {
    file,
    db,
    reader: new ReadModelReader(db, { cacheKeys: currentVersion, cacheChanges: currentVersion }),
    currentVersion,
    supervisor: null,
    storedPositions,
    giveWay: newGiveWayFlag(false),
  };
}

/**
 * Snapshots for new replicas: a consistent copy of the served model, taken while the service serves
 * and ingests (SQLite's `VACUUM INTO` reads one snapshot of the file), which carries the positions
 * stored with it; a new replica restored from it continues from those positions instead of
 * replaying every topic from the start.
 */
import { copyFileSync, existsSync, statSync } from 'node:fs';
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { writeSql } from '../../projections/orders/sql.js';
import { openReadModel, projectionVersionOf } from '../read-model/database.js';
import { ModelFiles } from '../read-model/files.js';

export class SnapshotRefused extends Error {
  readonly code = 'SNAPSHOT_REFUSED';
}

export interface SnapshotFacts {
  file: string;
  bytes: number;
  projectionVersion: number;
  /** messages the model has applied, summed over its stored positions */
  positions: number;
}

function positionsIn(file: string): { projectionVersion: number; positions: number } {
  const db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
  try {
    const offsets = db.prepare(writeSql.selectOffsets).all() as { next_offset: number }[];
    return {
      projectionVersion: projectionVersionOf(db),
      positions: offsets.reduce((sum, o) => sum + o.next_offset, 0),
    };
  } finally {
    db.close();
  }
}

/** Writes a consistent copy of the served model of `dataDir` to `to`, which must not exist. */
export function takeSnapshot(dataDir: string, to: string): SnapshotFacts {
  const served = new ModelFiles(dataDir).currentFile();
  if (served === null)
    throw new SnapshotRefused(`No read model in ${dataDir} yet: start the service or run a rebuild first.`);
  if (existsSync(to)) throw new SnapshotRefused(`${to} exists already; name a new file.`);
  const db = openReadModel(served, { readonly: true, anyProjectionVersion: true });
  try {
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
  return { file: to, bytes: statSync(to).size, ...positionsIn(to) };
}

/**
 * Makes a snapshot the served model of a new replica's `dataDir`. A snapshot of another projection
 * version is refused: this code would only rebuild it from the topics, which a fresh replica does anyway.
 */
export function restoreSnapshot(dataDir: string, from: string): SnapshotFacts {
  if (!existsSync(from)) throw new SnapshotRefused(`${from} does not exist.`);
  const facts = positionsIn(from);
  if (facts.projectionVersion !== PROJECTION_VERSION) {
    throw new SnapshotRefused(
      `${from} holds projection version ${facts.projectionVersion}; this code projects version ${PROJECTION_VERSION}. Take a snapshot from a replica that runs this version, or start without one (the replica then replays the topics).`,
    );
  }
  const files = new ModelFiles(dataDir);
  const served = files.currentFile();
  if (served !== null) {
    throw new SnapshotRefused(
      `${dataDir} already serves ${served}; restore a snapshot into the data directory of a new replica only.`,
    );
  }
  const file = files.newGenerationFile();
  copyFileSync(from, file);
  files.promote(file);
  return { file, bytes: statSync(file).size, ...facts };
}

/**
 * Snapshots for new replicas: a consistent copy of the served model, taken while the service serves
 * and ingests (SQLite's `VACUUM INTO` reads one snapshot of the file), which carries the positions
 * stored with it; a new replica restored from it continues from those positions instead of
 * replaying every topic from the start. The keys store is copied beside it (`<file>.keys`), so a
 * replica restored from both needs no history the topics may have lost.
 */
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { ordersModelSchema } from '../../projections/orders/schema.js';
import type { StoreSchema } from '../../projections/store-schema.js';
import { writeSql } from '../../projections/orders/sql.js';
import { keysFile } from '../keys/keys-files.js';
import { openReadModel, projectionVersionOf } from '../read-model/database.js';
import { ModelFiles } from '../read-model/files.js';
import { operatorSkipsIn } from '../read-model/operator-skips.js';

export class SnapshotRefused extends Error {
  readonly code = 'SNAPSHOT_REFUSED';
}

export interface SnapshotFacts {
  file: string;
  bytes: number;
  projectionVersion: number;
  /** messages the model has applied, summed over its stored positions */
  positions: number;
  /** the keys store's copy beside it (`<file>.keys`), with the messages it has applied; null when there was none */
  keys: { file: string; positions: number } | null;
}

/** The keys store's copy of a snapshot: beside it, so that one name carries both. */
export const keysCopyOf = (snapshot: string): string => `${snapshot}.keys`;

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
  if (existsSync(to) || existsSync(keysCopyOf(to)))
    throw new SnapshotRefused(`${to} or ${keysCopyOf(to)} exists already; name a new file.`);
  vacuumInto(served, to);
  // The keys store too: a new replica on a keys topic that lost its first events cannot build it.
  const store = keysFile(dataDir);
  let keys: SnapshotFacts['keys'] = null;
  if (existsSync(store)) {
    vacuumInto(store, keysCopyOf(to));
    keys = { file: keysCopyOf(to), positions: positionsIn(keysCopyOf(to)).positions };
  }
  return { file: to, bytes: statSync(to).size, ...positionsIn(to), keys };
}

/** A consistent copy of a model file, read in one snapshot while it is written to. */
function vacuumInto(file: string, to: string): void {
  const db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
  try {
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
}

/**
 * What makes a copy fit to serve: SQLite's integrity check, this code's version of its store (the
 * orders model's, or the keys store's), and positions that are offsets. Throws SnapshotRefused
 * saying what is wrong.
 */
function checkedFacts(
  file: string,
  shownAs: string,
  store: StoreSchema = ordersModelSchema,
): { projectionVersion: number; positions: number } {
  let facts: { projectionVersion: number; positions: number };
  try {
    const db = openReadModel(file, { readonly: true, anyProjectionVersion: true });
    try {
      const problems = (db.prepare('PRAGMA integrity_check(5)').all() as { integrity_check: string }[])
        .map((row) => row.integrity_check)
        .filter((line) => line !== 'ok');
      if (problems.length > 0) {
        throw new SnapshotRefused(
          `${shownAs} fails SQLite's integrity check (${problems.join('; ')}); take a new snapshot from a running replica.`,
        );
      }
      const offsets = db.prepare(writeSql.selectOffsets).all() as { next_offset: unknown }[];
      if (offsets.some((o) => !Number.isSafeInteger(o.next_offset) || (o.next_offset as number) < 0)) {
        throw new SnapshotRefused(`${shownAs} holds positions that are not offsets; take a new snapshot.`);
      }
      facts = {
        projectionVersion: projectionVersionOf(db),
        positions: offsets.reduce<number>((sum, o) => sum + (o.next_offset as number), 0),
      };
    } finally {
      db.close();
    }
  } catch (error) {
    if (error instanceof SnapshotRefused) throw error;
    throw new SnapshotRefused(
      `${shownAs} is not a readable read model (${error instanceof Error ? error.message : String(error)}); take a new snapshot from a running replica.`,
    );
  }
  if (facts.projectionVersion !== store.version) {
    throw new SnapshotRefused(
      `${shownAs} holds ${store.versionName} ${facts.projectionVersion}; this code projects version ${store.version}. Take a snapshot from a replica that runs this version, or start without one (the replica then replays the topics).`,
    );
  }
  return facts;
}

function fsyncFile(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes a snapshot the served model of a new replica's `dataDir`: the copy is made, fsynced and
 * checked (integrity, projection version, positions) before `CURRENT` names it; a refused copy is
 * removed. A snapshot of another projection version is refused: this code would only rebuild it
 * from the topics, which a fresh replica does anyway.
 */
export function restoreSnapshot(dataDir: string, from: string): SnapshotFacts {
  if (!existsSync(from)) throw new SnapshotRefused(`${from} does not exist.`);
  const files = new ModelFiles(dataDir);
  const served = files.currentFile();
  if (served !== null) {
    throw new SnapshotRefused(
      `${dataDir} already serves ${served}; restore a snapshot into the data directory of a new replica only.`,
    );
  }
  const file = files.newGenerationFile();
  try {
    copyFileSync(from, file);
    fsyncFile(file);
    const facts = checkedFacts(file, from);
    // The skips an operator made on the replica the snapshot comes from, for this one's rebuilds.
    const db = openReadModel(file, { readonly: true });
    try {
      for (const skip of operatorSkipsIn(db)) files.recordOperatorSkip(skip);
    } finally {
      db.close();
    }
    const keys = restoreKeys(dataDir, from);
    files.promote(file);
    return { file, bytes: statSync(file).size, ...facts, keys };
  } catch (error) {
    files.remove(file);
    throw error;
  }
}

/**
 * Restores the keys store's copy beside a snapshot, checked as the model is, where the directory has
 * no keys store of its own: a store is never replaced, so it never moves back.
 */
function restoreKeys(dataDir: string, from: string): SnapshotFacts['keys'] {
  const copy = keysCopyOf(from);
  const store = keysFile(dataDir);
  if (!existsSync(copy) || existsSync(store)) return null;
  const restoring = `${store}.restoring`;
  try {
    copyFileSync(copy, restoring);
    fsyncFile(restoring);
    const facts = checkedFacts(restoring, copy, keysStoreSchema);
    renameSync(restoring, store);
    return { file: store, positions: facts.positions };
  } finally {
    rmSync(restoring, { force: true });
  }
}

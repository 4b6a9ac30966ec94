/**
 * The read model on disk: a data directory of generation files, a `CURRENT` pointer naming the
 * served one and a `NEXT` pointer naming a candidate that the service serves once it has caught up
 * with the served one. Pointers are replaced atomically (write, fsync, rename). A rebuild writes a
 * new generation beside the served one; `rebuild.lock` keeps two rebuilds of one directory apart.
 * A process deletes the files it created or retired itself, and, while it holds both the serving
 * lock and the rebuild lock, the model files no pointer names (`removeLeftovers`).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import {
  acquireLease,
  defaultLease,
  LockHeld,
  readHolder,
  staleBecause,
  type Lease,
  type LockHolder,
} from './lease-lock.js';
import { removeModelFile } from './database.js';
import { ServingLockHeld, takeServingLock } from './serving-lock.js';
import type { OperatorSkip } from './operator-skips.js';
import { recordedSkips, recordSkip, skipRecordName, type SkipRecordOptions } from './skip-record.js';
import { recordedLosses, recordLoss } from './accepted-losses.js';
import type { AcceptedLoss } from '../kafka/history.js';
import { generationPattern, Pointer, PointerBroken, syncDirectory } from './pointer.js';

export type { LockHolder } from './lease-lock.js';
export { PointerBroken } from './pointer.js';

const buildingSuffix = '.building';
/** A finished build kept on purpose (`rebuild --no-promote`): no pointer names it, nothing deletes it. */
const keptSuffix = '-kept.sqlite';

export class RebuildLocked extends Error {
  readonly code = 'REBUILD_LOCKED';
}

export class ModelFiles {
  readonly lockPath: string;
  readonly skipsPath: string;
  private readonly current: Pointer;
  private readonly next: Pointer;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.current = new Pointer(
      dir,
      'CURRENT',
      'restore that file, or write the name of the model to serve into CURRENT; remove CURRENT only to start again from an empty model that replays every topic',
    );
    this.next = new Pointer(
      dir,
      'NEXT',
      'remove NEXT to propose nothing, or propose the file again (rebuild)',
    );
    this.lockPath = join(dir, 'rebuild.lock');
    this.skipsPath = join(dir, skipRecordName);
  }

  get pointerPath(): string {
    return this.current.path;
  }

  get nextPointerPath(): string {
    return this.next.path;
  }

  /**
   * Absolute path of the served generation, or null when there is no `CURRENT` (before the first
   * one exists). Throws PointerBroken when `CURRENT` names no model file of the directory.
   */
  currentFile(): string | null {
    return this.current.file();
  }

  /** The candidate a rebuild proposed, or null. Throws PointerBroken when `NEXT` names no model file. */
  nextFile(): string | null {
    return this.next.file();
  }

  /**
   * Checks both pointers before a service opens anything: one that names a missing file, or holds
   * a name that is no model file's, is an operator's mistake or a damaged directory, and guessing
   * (an empty model, no proposal) would hide the real model.
   */
  checkPointers(): void {
    this.currentFile();
    this.nextFile();
  }

  /** A fresh path for a generation that is being built. */
  newBuildingFile(): string {
    const stamp = new Date().toISOString().replace(/[-:.TZ]/g, '');
    return join(this.dir, `model-${stamp}-${randomBytes(3).toString('hex')}.sqlite${buildingSuffix}`);
  }

  /** A fresh path for a generation that becomes live at once (the very first one). */
  newGenerationFile(): string {
    return this.newBuildingFile().slice(0, -buildingSuffix.length);
  }

  /**
   * Renames a finished build (closed, journal not in WAL mode) to its final name; a build `kept` on
   * purpose, proposed by no one, is named so that `removeLeftovers` leaves it.
   */
  finishBuild(buildingFile: string, options: { kept?: boolean } = {}): string {
    const built = buildingFile.slice(0, -buildingSuffix.length);
    const finalFile = options.kept === true ? `${built.slice(0, -'.sqlite'.length)}${keptSuffix}` : built;
    renameSync(buildingFile, finalFile);
    syncDirectory(this.dir);
    return finalFile;
  }

  /** Makes `file` the served generation, atomically. Only the service that switches to it calls this. */
  promote(file: string): void {
    this.current.point(file);
  }

  /** Proposes `file` as the next served generation; the service switches once it has caught up. */
  proposeNext(file: string): void {
    this.next.point(file);
  }

  /** Withdraws the proposal when it still names `file`. */
  clearNext(file: string): void {
    this.next.clearIf(file);
  }

  /**
   * The batches operators have skipped (`skip-batch`), oldest first (`skip-record.ts`); every build
   * moves past each when it meets it.
   */
  operatorSkips(options: SkipRecordOptions = {}): OperatorSkip[] {
    return recordedSkips(this.dir, options);
  }

  /** Records an operator's skip for every build to come; a batch recorded already is not added again. */
  recordOperatorSkip(
    skip: OperatorSkip,
    options: SkipRecordOptions = {},
  ): { recorded: OperatorSkip; added: boolean } {
    return recordSkip(this.dir, skip, options);
  }

  /** The operators' acceptances of lost history, read by every build before it starts (`kafka/history.ts`). */
  acceptedLosses(): AcceptedLoss[] {
    return recordedLosses(this.dir);
  }

  /** Records an operator's acceptance that a partition's history below an offset is gone; true when added. */
  recordAcceptedLoss(loss: AcceptedLoss): boolean {
    return recordLoss(this.dir, loss);
  }

  /**
   * Deletes a model file of the directory (with its -wal and -shm files): a generation this process
   * created or retired, or a build.
   */
  remove(file: string): void {
    removeModelFile(file);
  }

  /**
   * Takes the directory's rebuild lock for `purpose`, or throws RebuildLocked naming its holder. The
   * lock is a lease (`lease-lock.ts`), renewed until released: one left by a process that is gone,
   * here or on another host, is taken over. Returns the release function.
   */
  acquireRebuildLock(purpose: string, lease: Lease = defaultLease): () => void {
    try {
      return acquireLease(this.lockPath, purpose, lease);
    } catch (error) {
      if (!(error instanceof LockHeld)) throw error;
      const { holder } = error;
      throw new RebuildLocked(
        `Another rebuild of ${this.dir} is running (${holder.purpose}, pid ${holder.pid} on ${holder.host} since ${holder.since}, lease renewed at ${holder.renewedAt}). Wait for it to finish, or stop it: its lock is taken over once its lease of ${lease.ttlMs / 1000} s runs out.`,
      );
    }
  }

  /** Who holds the rebuild lock, or null. */
  lockHolder(): LockHolder | null {
    return readHolder(this.lockPath);
  }

  /** Whether a rebuild holds the lock now (a lock whose holder is gone does not count). */
  rebuildRunning(): boolean {
    const holder = this.lockHolder();
    return holder !== null && staleBecause(holder, defaultLease) === null;
  }

  /**
   * Deletes what no one will ever serve: the model files (with their -wal and -shm) that neither
   * `CURRENT` nor `NEXT` names, such as a proposal replaced by another, a build killed between its
   * rename and its proposal, or a model a killed switch had not yet deleted; and the builds of
   * interrupted rebuilds. Kept builds (`rebuild --no-promote`) stay. Only while no service serves the
   * directory and no rebuild writes in it: the caller holds one of the two locks, this takes the
   * other for the sweep, or deletes nothing when it is held. Nothing either while `CURRENT` is
   * missing or a pointer is broken (a directory an operator is setting up or repairing).
   * Returns the deleted files.
   */
  removeLeftovers(holding: 'serving lock' | 'rebuild lock'): string[] {
    let release: () => void;
    try {
      if (holding === 'serving lock') release = this.acquireRebuildLock('removing files no pointer names');
      else {
        const serving = takeServingLock(this.dir, { waitMs: 0 });
        release = () => serving.release();
      }
    } catch (error) {
      if (error instanceof RebuildLocked || error instanceof ServingLockHeld) return [];
      throw error;
    }
    try {
      let named: (string | null)[];
      try {
        named = [this.currentFile(), this.nextFile()];
      } catch (error) {
        if (error instanceof PointerBroken) return [];
        throw error;
      }
      if (named[0] === null) return [];
      const leftovers = readdirSync(this.dir)
        .filter((name) => generationPattern.test(name) && !name.endsWith(keptSuffix))
        .map((name) => join(this.dir, name))
        .filter((file) => !named.includes(file))
        .concat(this.abandonedBuilds());
      for (const file of leftovers) this.remove(file);
      return leftovers;
    } finally {
      release();
    }
  }

  /** Builds left behind by interrupted rebuilds. */
  abandonedBuilds(): string[] {
    return readdirSync(this.dir)
      .filter(
        (name) =>
          name.endsWith(buildingSuffix) && generationPattern.test(name.slice(0, -buildingSuffix.length)),
      )
      .map((name) => join(this.dir, name));
  }
}

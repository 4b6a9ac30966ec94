/**
 * One serving process per data directory. Two services on one `DATA_DIR` (a second start by
 * mistake, a new container started while the old one still runs) would both write the served model,
 * promote proposals and delete the files they retire under each other. The lock is an exclusive
 * SQLite transaction on `DATA_DIR/serving.lock`, held for the life of the process: the kernel lets
 * it go when the process ends, however it ends (SIGKILL included), so a restart never waits for a
 * lease to run out. The operator commands (skip-batch, snapshot) do not take it; a rebuild takes it
 * for the moment it deletes files no pointer names, when no service holds it.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

export class ServingLockHeld extends Error {
  readonly code = 'DATA_DIR_SERVED';
}

export interface ServingLock {
  release(): void;
}

/**
 * Takes the lock, waiting up to `waitMs` for a holder to let it go: a service's start waits out the
 * moment a rebuild holds it to delete the files no pointer names (`ModelFiles.removeLeftovers`).
 */
export function takeServingLock(dataDir: string, options: { waitMs?: number } = {}): ServingLock {
  const path = join(dataDir, 'serving.lock');
  const holderPath = `${path}.holder`;
  const db = new Database(path, { timeout: options.waitMs ?? 2000 });
  try {
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    let holder = 'another process';
    try {
      holder = readFileSync(holderPath, 'utf8').trim();
    } catch {
      // written just after the lock is taken; a holder that has only just started has none yet
    }
    throw new ServingLockHeld(
      `${dataDir} is served by ${holder} already; one service per DATA_DIR (stop that one first, or give this one a DATA_DIR of its own).`,
    );
  }
  writeFileSync(holderPath, `pid ${process.pid} on ${hostname()} since ${new Date().toISOString()}\n`);
  return {
    release: () => {
      if (!db.open) return;
      rmSync(holderPath, { force: true });
      db.close();
    },
  };
}

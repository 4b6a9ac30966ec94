/**
 * A lock file held as a lease. The holder's identity (host, pid, the process's start, a token of
 * its own) appears with the file at once: it is written to a temporary file and linked into place,
 * which fails if a lock exists. The holder renews the lease while it runs; a lock is taken over when
 * its lease has run out, when its process no longer runs on this host, or when it names this host's
 * pid of another process (a new container's PID 1, a reused pid).
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';

export interface LockHolder {
  pid: number;
  host: string;
  /** the process's start (clock ticks after boot, from /proc), or null where /proc is not there */
  processStart: number | null;
  /** unique to the process that holds it */
  token: string;
  purpose: string;
  since: string;
  renewedAt: string;
}

export interface Lease {
  /** a lock not renewed for this long is taken over */
  ttlMs: number;
  /** how often the holder renews it */
  renewMs: number;
}

export const defaultLease: Lease = { ttlMs: 60_000, renewMs: 10_000 };

export class LockHeld extends Error {
  constructor(readonly holder: LockHolder) {
    super(`held by pid ${holder.pid} on ${holder.host} (${holder.purpose}) since ${holder.since}`);
  }
}

/** The start of process `pid` in clock ticks after boot (field 22 of /proc/PID/stat), or null. */
export function processStartOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const start = Number(fields[19]);
    return Number.isFinite(start) ? start : null;
  } catch {
    return null;
  }
}

/**
 * Unique to this process and the same in each of its threads, which load this module each anew (a
 * catch-up replay's thread must see the main thread's lock as held): the pid and the process's start.
 * Where /proc is not there, random, and so one per thread.
 */
const processToken = ((start) =>
  start === null ? randomBytes(8).toString('hex') : `${process.pid}-${start}`)(processStartOf(process.pid));

export function readHolder(path: string): LockHolder | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as LockHolder;
  } catch {
    return null;
  }
}

/** Why a holder no longer holds its lock, or null while it does. */
export function staleBecause(holder: LockHolder, lease: Lease, now = Date.now()): string | null {
  const renewed = Date.parse(holder.renewedAt);
  if (!Number.isFinite(renewed) || now - renewed > lease.ttlMs) return 'its lease ran out';
  if (holder.host !== hostname()) return null;
  if (holder.pid === process.pid)
    return holder.token === processToken ? null : 'it names this pid of an earlier process';
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return 'its process no longer runs';
  }
  const start = processStartOf(holder.pid);
  if (holder.processStart !== null && start !== null && start !== holder.processStart)
    return 'its pid belongs to another process now';
  return null;
}

/**
 * Takes the lock at `path` for `purpose`, or throws LockHeld naming a live holder. Returns the
 * release function; the lease is renewed until then.
 */
export function acquireLease(path: string, purpose: string, lease: Lease = defaultLease): () => void {
  const now = new Date().toISOString();
  const mine: LockHolder = {
    pid: process.pid,
    host: hostname(),
    processStart: processStartOf(process.pid),
    token: processToken,
    purpose,
    since: now,
    renewedAt: now,
  };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const tmp = `${path}.${processToken}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, JSON.stringify(mine));
    try {
      linkSync(tmp, path);
      return renewing(path, mine, lease);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      rmSync(tmp, { force: true });
    }
    const holder = readHolder(path);
    if (holder === null) continue; // released meanwhile, or not ours to judge: try again
    if (staleBecause(holder, lease) === null) throw new LockHeld(holder);
    takeOver(path, holder);
  }
  const holder = readHolder(path);
  if (holder !== null) throw new LockHeld(holder);
  throw new Error(`could not take ${path}`);
}

/**
 * Moves a stale lock aside; if what was moved is not the lock judged stale (another process took
 * it over and linked its own in between), puts that one back.
 */
function takeOver(path: string, stale: LockHolder): void {
  const aside = `${path}.${processToken}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = readHolder(aside);
  if (moved !== null && (moved.token !== stale.token || moved.renewedAt !== stale.renewedAt)) {
    try {
      linkSync(aside, path);
    } catch {
      // a third process holds it now: it stays theirs
    }
  }
  rmSync(aside, { force: true });
}

function renewing(path: string, mine: LockHolder, lease: Lease): () => void {
  let held = true;
  const renew = (): void => {
    if (readHolder(path)?.token !== mine.token) {
      clearInterval(timer);
      held = false;
      return;
    }
    const tmp = `${path}.${processToken}.renew.tmp`;
    writeFileSync(tmp, JSON.stringify({ ...mine, renewedAt: new Date().toISOString() }));
    renameSync(tmp, path);
  };
  const timer = setInterval(() => {
    try {
      renew();
    } catch {
      // the next renewal tries again; a lease that runs out is taken over, as it should be
    }
  }, lease.renewMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    if (held && readHolder(path)?.token === mine.token) rmSync(path, { force: true });
    held = false;
  };
}

/**
 * Whether this machine keeps a model file in the page cache while nothing reads it:
 * `npm run bench:page-cache` (`BENCH_MB` default 256, `BENCH_IDLE_SECONDS` default 180,
 * `BENCH_SAMPLE_SECONDS` default 15).
 *
 * Two copies of one SQLite file of BENCH_MB are each read once from end to end in this process: one
 * as the service reads its model (`pread`), one through a memory map (`PRAGMA mmap_size`). Then
 * nothing reads either, and their share in the page cache (`fincore`) is sampled, with this
 * process's RssFile (what the map costs in RSS). Then each is read again, timed, with the bytes
 * this process read from the disk meanwhile. The kernel's DAMON schemes, where it has them, are
 * recorded beside, with what they, the kernel's LRU reclaim and writes to drop_caches took from the
 * whole machine while the copies were idle. Writes bench/results/page-cache-<UTC date-time>.json.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isEntryPoint } from '../tools/harness.js';
import { reportRun } from './cli.js';
import type { Figure } from './run.js';
import { pageCacheBytes } from './lib.js';
import { statusKb, treeDiskReadBytes } from './peers/proc.js';

const mb = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;

const selfReadBytes = (): number => treeDiskReadBytes([process.pid]);

const rssFileMb = (): number => mb(statusKb(process.pid, 'RssFile') * 1024);

const residentMb = (file: string): number | null => {
  const bytes = pageCacheBytes(file);
  return bytes === null ? null : mb(bytes);
};

/** A file of `megabytes` holding one table of 3 900-byte blobs, about one per 4 KiB page. */
function buildFile(file: string, megabytes: number): void {
  const db = new Database(file);
  try {
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)');
    db.prepare(
      `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ?)
       INSERT INTO t (v) SELECT randomblob(3900) FROM n`,
    ).run(megabytes * 256);
  } finally {
    db.close();
  }
}

/** Reads every row's last bytes (so every page), timed, with what the disk gave. */
function scan(db: Database.Database): { ms: number; diskReadMb: number } {
  const readBefore = selfReadBytes();
  const started = performance.now();
  db.prepare('SELECT max(substr(v, 3890, 8)) FROM t').pluck().get();
  return { ms: Math.round(performance.now() - started), diskReadMb: mb(selfReadBytes() - readBefore) };
}

/** The kernel's DAMON schemes (action, least age, the filters), or null where it has none. */
function damonSchemes(): Record<string, string>[] | null {
  const root = '/sys/kernel/mm/damon/admin/kdamonds';
  const read = (path: string): string => readFileSync(path, 'utf8').trim();
  try {
    const schemes: Record<string, string>[] = [];
    for (const kdamond of readdirSync(root).filter((name) => /^\d+$/.test(name))) {
      const contexts = join(root, kdamond, 'contexts');
      for (const context of readdirSync(contexts).filter((name) => /^\d+$/.test(name))) {
        const base = join(contexts, context);
        for (const scheme of readdirSync(join(base, 'schemes')).filter((name) => /^\d+$/.test(name))) {
          const s = join(base, 'schemes', scheme);
          const filters = join(s, 'ops_filters');
          schemes.push({
            kdamond: `${kdamond} (${read(join(root, kdamond, 'state'))})`,
            operations: read(join(base, 'operations')),
            aggregationUs: read(join(base, 'monitoring_attrs', 'intervals', 'aggr_us')),
            action: read(join(s, 'action')),
            leastAgeInAggregations: read(join(s, 'access_pattern', 'age', 'min')),
            quotaBytesPerReset: read(join(s, 'quotas', 'bytes')),
            filters: readdirSync(filters)
              .filter((name) => /^\d+$/.test(name))
              .map(
                (f) =>
                  `${read(join(filters, f, 'type'))}: ${read(join(filters, f, 'allow')) === 'Y' ? 'allow' : 'reject'}`,
              )
              .join(', '),
          });
        }
      }
    }
    return schemes;
  } catch {
    return null;
  }
}

/**
 * Bytes the kernel's DAMON schemes have paged out since boot (their `sz_applied`, refreshed by
 * `update_schemes_stats`, which needs root), the pages kswapd and direct reclaim took, and the times
 * something wrote to /proc/sys/vm/drop_caches (/proc/vmstat): who took pages from the page cache.
 * DAMON's figure is null where it cannot be read.
 */
function reclaimed(): { damonPagedOutBytes: number | null; lruReclaimedPages: number; dropCaches: number } {
  const root = '/sys/kernel/mm/damon/admin/kdamonds';
  let damon: number | null = null;
  try {
    for (const kdamond of readdirSync(root).filter((name) => /^\d+$/.test(name))) {
      writeFileSync(join(root, kdamond, 'state'), 'update_schemes_stats');
      const schemes = join(root, kdamond, 'contexts', '0', 'schemes');
      for (const scheme of readdirSync(schemes).filter((name) => /^\d+$/.test(name)))
        damon = (damon ?? 0) + Number(readFileSync(join(schemes, scheme, 'stats', 'sz_applied'), 'utf8'));
    }
  } catch {
    damon = null;
  }
  const vmstat = readFileSync('/proc/vmstat', 'utf8');
  const counter = (name: string): number => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(vmstat)?.[1] ?? 0);
  return {
    damonPagedOutBytes: damon,
    lruReclaimedPages: counter('pgsteal_kswapd') + counter('pgsteal_direct'),
    dropCaches: counter('drop_pagecache'),
  };
}

export async function measurePageCache(options: {
  megabytes: number;
  idleSeconds: number;
  sampleSeconds: number;
}) {
  const dir = mkdtempSync(join(tmpdir(), 'page-cache-'));
  try {
    const preadFile = join(dir, 'pread.sqlite');
    const mappedFile = join(dir, 'mapped.sqlite');
    buildFile(preadFile, options.megabytes);
    copyFileSync(preadFile, mappedFile);
    execFileSync('sync');
    const pread = new Database(preadFile, { readonly: true });
    const mapped = new Database(mappedFile, { readonly: true });
    mapped.pragma(`mmap_size = ${2 ** 34}`);
    try {
      const first = { pread: scan(pread), mapped: scan(mapped) };
      const reclaimedBefore = reclaimed();
      const sampleAt = (seconds: number) => ({
        seconds,
        preadResidentMb: residentMb(preadFile),
        mappedResidentMb: residentMb(mappedFile),
        rssFileMb: rssFileMb(),
      });
      const timeline: ReturnType<typeof sampleAt>[] = [];
      const started = Date.now();
      for (;;) {
        const seconds = Math.round((Date.now() - started) / 1000);
        const sample = sampleAt(seconds);
        timeline.push(sample);
        console.log(
          `${seconds} s idle: pread copy ${sample.preadResidentMb} MB in the page cache, mapped copy ${sample.mappedResidentMb} MB; RssFile ${sample.rssFileMb} MB`,
        );
        if (seconds >= options.idleSeconds) break;
        await new Promise((wake) => setTimeout(wake, options.sampleSeconds * 1000));
      }
      const reclaimedAfter = reclaimed();
      const again = { pread: scan(pread), mapped: scan(mapped) };
      const whileIdle = {
        damonPagedOutMb:
          reclaimedBefore.damonPagedOutBytes === null || reclaimedAfter.damonPagedOutBytes === null
            ? null
            : mb(reclaimedAfter.damonPagedOutBytes - reclaimedBefore.damonPagedOutBytes),
        lruReclaimedPages: reclaimedAfter.lruReclaimedPages - reclaimedBefore.lruReclaimedPages,
        dropCaches: reclaimedAfter.dropCaches - reclaimedBefore.dropCaches,
      };
      return { first, timeline, again, reclaimedWhileIdle: whileIdle };
    } finally {
      pread.close();
      mapped.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isEntryPoint(import.meta.url)) {
  const options = {
    megabytes: Number(process.env['BENCH_MB'] ?? 256),
    idleSeconds: Number(process.env['BENCH_IDLE_SECONDS'] ?? 180),
    sampleSeconds: Number(process.env['BENCH_SAMPLE_SECONDS'] ?? 15),
  };
  const started = new Date();
  const damon = damonSchemes();
  console.log(`DAMON schemes: ${JSON.stringify(damon)}`);
  const measured = await measurePageCache(options);
  const last = measured.timeline.at(-1)!;
  const copy = (name: 'pread' | 'mapped', resident: number | null): Figure => ({
    name: `${name} copy: first read; after ${last.seconds} s idle, in the page cache and read again`,
    value: `${measured.first[name].ms} ms, ${measured.first[name].diskReadMb} MB from the disk; ${resident ?? 'unknown'} of ${options.megabytes} MB, ${measured.again[name].ms} ms, ${measured.again[name].diskReadMb} MB from the disk`,
  });
  const idle = measured.reclaimedWhileIdle;
  reportRun(
    'page-cache',
    started,
    options,
    [
      copy('pread', last.preadResidentMb),
      copy('mapped', last.mappedResidentMb),
      { name: 'RssFile of this process, both copies read', value: `${last.rssFileMb} MB` },
      {
        name: 'while idle, in the whole machine: paged out by DAMON; taken by kswapd and direct reclaim; writes to drop_caches',
        value: `${idle.damonPagedOutMb ?? 'unknown'} MB; ${idle.lruReclaimedPages} pages; ${idle.dropCaches}`,
      },
    ],
    { loadAverage: loadavg(), damon, ...measured },
  );
}

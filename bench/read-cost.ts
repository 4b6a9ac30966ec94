/**
 * Why a read costs more between requests than in a loop, in one process with no broker:
 * `npm run bench:read-cost` (`BENCH_ORDERS` default 50 000, `BENCH_SECONDS` of wrk per figure
 * default 5, `BENCH_REPETITIONS` of every figure default 5). Writes
 * bench/results/read-cost-<UTC date-time>.json.
 *
 * On a model file built from the seeded demo data it times the page read of `/orders?limit=50`
 * (organizations drawn uniformly by a seeded generator, `seededRandom`) in four settings:
 *   1. in a loop, one read after another;
 *   2. after touching K bytes of other memory (a buffer read with a 64-byte stride, as the HTTP
 *      stack's work touches its own), for K from 0 to 32 MiB: what the read costs once the CPU
 *      caches hold other data;
 *   3. inside requests answered by the service's HTTP app through `app.inject` (no socket);
 *   4. inside requests the same app answers on a loopback port under wrk (a process of its own).
 * Each read is timed by the wall clock around the reader's call (`performance.now()`), and its
 * median taken: a read preempted by another process on this shared machine weighs on the mean, not
 * on the median. Each block of reads or requests is also timed by this thread's CPU time
 * (`process.threadCpuUsage()`, which moves in scheduler ticks: meaningful over a block, not a read).
 * Every figure is measured `BENCH_REPETITIONS` times and given as its median and range.
 * With no hardware counters on this virtual machine (`perf stat` reports none supported), the
 * second setting stands in for cache-miss counts: if the read grows with K as it grows inside a
 * request, the extra cost is the caches, not the code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp } from '../src/http/app.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import { openReadModel } from '../src/read-model/database.js';
import { ReadModelReader, type ApiReads, type OrderPageQuery } from '../src/read-model/reader.js';
import { apiKeyIssued } from '../test/helpers/events.js';
import { memoryReadModel } from '../test/helpers/read-model.js';
import { demoEvents, seededRandom } from '../tools/demo-data.js';
import { isEntryPoint } from '../tools/harness.js';
import { loadSampler } from './peers/proc.js';
import { spread, type Spread } from './peers/rounds.js';
import { wrk } from './peers/wrk.js';
import { KeyLookup } from '../src/keys/key-lookup.js';
import { reportRun } from './cli.js';

const v1 = '/api/external-api/v1';
const round1 = (value: number): number => Math.round(value * 10) / 10;

/** This thread's CPU time so far, µs. */
const threadCpu = (): number => {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
};

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? 0 : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export async function measureReadCost(
  orders: number,
  seconds: number,
  repetitions: number,
  samples = 20_000,
): Promise<Record<string, Spread>> {
  const dir = mkdtempSync(join(tmpdir(), 'read-cost-'));
  const file = join(dir, 'model.sqlite');
  try {
    const organizations = Math.max(10, Math.round(orders / 100));
    const model = memoryReadModel(openReadModel(file));
    const keys = Array.from({ length: organizations }, (_, i) => `bench-key-of-org-${i + 1}`);
    model.apply(...keys.map((key, i) => apiKeyIssued(`k${i + 1}`, i + 1, sha256Hex(key))));
    model.applyInBatches(500, [...demoEvents({ seed: 7, organizations, orders, articlesPerOrder: 3 })]);
    model.db.close();

    const reader = new ReadModelReader(openReadModel(file, { readonly: true }), {
      cacheChanges: true,
    });
    const keyLookup = KeyLookup.of(reader.db);
    const random = seededRandom(7);
    const drawOrg = (): number => Math.floor(random() * organizations);
    const query = (): OrderPageQuery => ({ orgId: 1 + drawOrg(), status: null, limit: 50, offset: 0 });
    let walls: number[] = [];
    const timedRead = (q: OrderPageQuery): ReturnType<typeof reader.orderPage> => {
      const started = performance.now();
      const page = reader.orderPage(q);
      walls.push(performance.now() - started);
      return page;
    };
    /** the median µs of the reads timed since the last call */
    const medianRead = (): number => {
      const taken = walls;
      walls = [];
      return round1(median(taken) * 1000);
    };
    const runs: Record<string, number[]> = {};
    const record = (name: string, value: number): void => {
      (runs[name] ??= []).push(round1(value));
    };

    const api: ApiReads = {
      orgOfKeyHash: (hash) => keyLookup.orgOfKeyHash(hash),
      orderPage: timedRead,
      articlesOfOrder: (org, order) => reader.articlesOfOrder(org, order),
      inReadTransaction: (read) =>
        reader.inReadTransaction((model) =>
          read({
            orgDigest: (org) => model.orgDigest(org),
            orderDigest: (order) => model.orderDigest(order),
            orderPage: timedRead,
            articlesOfOrder: (org, order) => model.articlesOfOrder(org, order),
            position: () => model.position(),
          }),
        ),
    };
    const app = await buildApp({ readerOf: () => api, logger: pino({ level: 'silent' }) });
    // The stack's own cost: the same app with every read answered by one constant page.
    const constantPage = reader.orderPage({ orgId: 1, status: null, limit: 50, offset: 0 });
    const constant = await buildApp({
      readerOf: () => ({ ...api, orderPage: () => constantPage }),
      logger: pino({ level: 'silent' }),
    });
    const originOf = async (server: typeof app): Promise<string> => {
      await server.listen({ host: '127.0.0.1', port: 0 });
      const address = server.server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      return `http://127.0.0.1:${address.port}`;
    };
    const origin = await originOf(app);
    const constantOrigin = await originOf(constant);
    const load = keys.map((key) => ({ path: `${v1}/orders?limit=50`, key }));
    const other = Buffer.alloc(32 * 1024 * 1024, 1);
    let sink = 0;
    // the sum stays a small integer in a local: no number boxed per byte touched
    const touch = (bytes: number): void => {
      let sum = 0;
      for (let at = 0; at < bytes; at += 64) sum += other[at]!;
      sink = (sink + sum) | 0;
    };

    for (let i = 0; i < samples; i++) reader.orderPage(query());
    for (let repetition = 0; repetition < repetitions; repetition += 1) {
      let cpu = threadCpu();
      for (let i = 0; i < samples; i++) timedRead(query());
      record('1. in a loop: thread CPU per read', (threadCpu() - cpu) / samples);
      record('1. in a loop: median wall time of a read', medianRead());

      const n = Math.min(samples, 2000);
      for (const kib of [0, 64, 256, 1024, 2048, 4096, 16_384, 32_768]) {
        const bytes = kib * 1024;
        cpu = threadCpu();
        for (let i = 0; i < n; i++) touch(bytes);
        const touchOnly = (threadCpu() - cpu) / n;
        cpu = threadCpu();
        for (let i = 0; i < n; i++) {
          touch(bytes);
          timedRead(query());
        }
        record(
          `2. after touching ${kib} KiB: thread CPU per read (touch and read − touch alone)`,
          (threadCpu() - cpu) / n - touchOnly,
        );
        record(`2. after touching ${kib} KiB: median wall time of a read`, medianRead());
      }

      cpu = threadCpu();
      for (let i = 0; i < samples; i++) {
        const response = await app.inject({
          method: 'GET',
          url: `${v1}/orders?limit=50`,
          headers: { authorization: `Bearer ${keys[drawOrg()]}` },
        });
        if (response.statusCode !== 200) throw new Error(`answered ${response.statusCode}`);
      }
      record('3. inside requests (app.inject): thread CPU per request', (threadCpu() - cpu) / samples);
      record('3. inside requests (app.inject): median wall time of a read', medianRead());

      // wrk runs as a process of its own: the event loop here answers while it waits
      await wrk(origin, load, 2);
      medianRead();
      let before = process.cpuUsage();
      const measured = await wrk(origin, load, seconds);
      let used = process.cpuUsage(before);
      record('4. inside requests (wrk, loopback): median wall time of a read', medianRead());
      record('4. server CPU per request (wrk)', (used.user + used.system) / measured.requests);
      record('4. req/s (wrk)', measured.rps);

      await wrk(constantOrigin, load, 2);
      before = process.cpuUsage();
      const constantRun = await wrk(constantOrigin, load, seconds);
      used = process.cpuUsage(before);
      record(
        '5. stack alone, constant page: server CPU per request (wrk)',
        (used.user + used.system) / constantRun.requests,
      );
    }
    if (sink === 0) throw new Error('nothing was touched');
    await app.close();
    await constant.close();
    reader.db.close();
    const figures = Object.fromEntries(Object.entries(runs).map(([name, values]) => [name, spread(values)]));
    const goal = (stack: number, read: number): number => round1(1.5 * (stack + read));
    figures['goal: 1.5 × (stack alone + thread CPU of a read in a loop)'] = spread(
      runs['5. stack alone, constant page: server CPU per request (wrk)']!.map((stack, i) =>
        goal(stack, runs['1. in a loop: thread CPU per read']![i]!),
      ),
    );
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isEntryPoint(import.meta.url)) {
  const orders = Number(process.env['BENCH_ORDERS'] ?? 50_000);
  const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
  const repetitions = Number(process.env['BENCH_REPETITIONS'] ?? 5);
  const started = new Date();
  const load = loadSampler();
  const figures = await measureReadCost(orders, seconds, repetitions);
  const loadAverage = load.summary();
  load.stop();
  reportRun(
    'read-cost',
    started,
    { orders, seconds, repetitions },
    Object.entries(figures).map(([name, s]) => ({
      name,
      value: `median ${s.median} (${s.min}–${s.max}) over ${s.rounds.length} repetitions`,
    })),
    { readCost: figures, loadAverage },
  );
}

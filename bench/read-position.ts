/**
 * What presenting a position costs (X-Read-Position, `src/http/position.ts`), in one process with no
 * broker: `npm run bench:read-position` (`BENCH_ORDERS` default 50 000, `BENCH_SECONDS` of wrk per
 * figure default 5, `BENCH_ROUNDS` default 3, `BENCH_CONNECTIONS` default 8).
 *
 * A model file built from the seeded demo data is served by the service's HTTP app (its reader
 * caching keys, digests and positions as the service's does) on a loopback port; wrk (a process of
 * its own) sends `/orders?limit=50` of random organizations, and the same with the tag each page
 * was given (304s), each without and with the model's own position in `X-Read-Position` (reached:
 * answered at once), in rounds ABAB. Figures: server CPU per request (this process's CPU time over
 * wrk's requests), p99, req/s; then CPU per request of the same loads through `app.inject`, in
 * short turns (part 2). Writes bench/results/read-position-<UTC date-time>.json.
 *
 * `BENCH_BASELINE_ROOT=<a checkout of earlier code>` also serves a model built by that code, with
 * that code's own writer, reader and app, in the same process and the same rounds (its loads
 * without a position): the cost against the code before positions, measured side by side.
 */
import type { ApiReads } from '../src/read-model/reader.js';
import { existsSync } from 'node:fs';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { isEntryPoint, projectRoot } from '../tools/harness.js';
import { wrk, type WrkRequest } from './peers/wrk.js';

const v1 = '/api/external-api/v1';
const round1 = (value: number): number => Math.round(value * 10) / 10;
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

/** µs of CPU per request through app.inject, by load (part 2), filled by `measurePositionCost` */
export const injectedCpu: Record<string, number> = {};

interface Figure {
  serverCpuMicrosPerRequest: number;
  p99Ms: number;
  rps: number;
  rounds: { serverCpuMicrosPerRequest: number; p99Ms: number; rps: number; loadAverage: number }[];
}

/** A model of `orders` built and served by the code at `root`, through its own modules. */
async function serveModelOf(
  root: string,
  file: string,
  orders: number,
): Promise<{ app: FastifyInstance; origin: string; keys: string[]; close: () => Promise<void> }> {
  const load = async <T>(path: string): Promise<T> =>
    (await import(pathToFileURL(join(root, path)).href)) as T;
  const { buildApp } = await load<typeof import('../src/http/app.js')>('src/http/app.ts');
  const { sha256Hex } = await load<typeof import('../src/http/bearer-key.js')>('src/http/bearer-key.ts');
  const { openReadModel } = await load<typeof import('../src/read-model/database.js')>(
    'src/read-model/database.ts',
  );
  const { ReadModelReader } =
    await load<typeof import('../src/read-model/reader.js')>('src/read-model/reader.ts');
  const { apiKeyIssued } = await load<typeof import('../test/helpers/events.js')>('test/helpers/events.ts');
  const { memoryReadModel } = await load<typeof import('../test/helpers/read-model.js')>(
    'test/helpers/read-model.ts',
  );
  const { demoEvents } = await load<typeof import('../tools/demo-data.js')>('tools/demo-data.ts');
  const organizations = Math.max(10, Math.round(orders / 100));
  const model = memoryReadModel(openReadModel(file));
  const keys = Array.from({ length: organizations }, (_, i) => `bench-key-of-org-${i + 1}`);
  model.apply(...keys.map((key, i) => apiKeyIssued(`k${i + 1}`, i + 1, sha256Hex(key))));
  model.applyInBatches(500, [...demoEvents({ seed: 7, organizations, orders, articlesPerOrder: 3 })]);
  model.db.close();
  // The code before the keys store cached keys in the reader (`cacheKeys`); this code reads them from
  // the keys store, remembering them while its commit counter does not move (nothing writes here).
  const reader = new ReadModelReader(openReadModel(file, { readonly: true }), {
    cacheKeys: true,
    cacheChanges: true,
  } as ConstructorParameters<typeof ReadModelReader>[1]);
  const reads = existsSync(join(root, 'src/keys/key-lookup.ts'))
    ? await (async () => {
        const { KeyLookup } =
          await load<typeof import('../src/keys/key-lookup.js')>('src/keys/key-lookup.ts');
        const { newCommitCounter } = await load<typeof import('../src/read-model/commit-counter.js')>(
          'src/read-model/commit-counter.ts',
        );
        const { readsOf } = await load<typeof import('../src/read-model/read-view.js')>(
          'src/read-model/read-view.ts',
        );
        const keys = KeyLookup.open({ id: 1, file, predecessor: null, commits: newCommitCounter() });
        return readsOf(() => ({ served: reader, keys }));
      })()
    : (reader as unknown as ApiReads);
  const app = await buildApp({ readerOf: () => reads, logger: pino({ level: 'silent' }) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    app,
    origin: `http://127.0.0.1:${address.port}`,
    keys,
    close: async () => {
      await app.close();
      reader.db.close();
    },
  };
}

/** The page of every organization as a load, and the same with the tag each was given (304s). */
async function loadsOf(
  served: Awaited<ReturnType<typeof serveModelOf>>,
): Promise<{ pages: WrkRequest[]; polls: WrkRequest[]; position: string | undefined }> {
  const path = `${v1}/orders?limit=50`;
  const pages: WrkRequest[] = served.keys.map((key) => ({ path, key }));
  const polls: WrkRequest[] = [];
  let position: string | undefined;
  for (const key of served.keys) {
    const answer = await served.app.inject({
      method: 'GET',
      url: path,
      headers: { authorization: `Bearer ${key}` },
    });
    if (answer.statusCode !== 200) throw new Error(`answered ${answer.statusCode}`);
    polls.push({ path, key, headers: { 'If-None-Match': String(answer.headers.etag) } });
    const given = answer.headers['x-read-position'];
    if (typeof given === 'string') position = given;
  }
  return { pages, polls, position };
}

export async function measurePositionCost(options: {
  orders: number;
  seconds: number;
  rounds: number;
  connections: number;
  baselineRoot: string | null;
}): Promise<Record<string, Figure>> {
  const dir = mkdtempSync(join(tmpdir(), 'read-position-'));
  const served: Awaited<ReturnType<typeof serveModelOf>>[] = [];
  try {
    const current = await serveModelOf(projectRoot, join(dir, 'model.sqlite'), options.orders);
    served.push(current);
    const mine = await loadsOf(current);
    const position = mine.position;
    if (position === undefined) throw new Error('no X-Read-Position given');
    const withPosition = (load: WrkRequest[]): WrkRequest[] =>
      load.map((r) => ({ ...r, headers: { ...r.headers, 'X-Read-Position': position } }));
    const loads: Record<string, { origin: string; load: WrkRequest[] }> = {
      'pages (200), no position': { origin: current.origin, load: mine.pages },
      'pages (200), position presented': { origin: current.origin, load: withPosition(mine.pages) },
      'polls (304), no position': { origin: current.origin, load: mine.polls },
      'polls (304), position presented': { origin: current.origin, load: withPosition(mine.polls) },
    };
    if (options.baselineRoot !== null) {
      const before = await serveModelOf(options.baselineRoot, join(dir, 'before.sqlite'), options.orders);
      served.push(before);
      const theirs = await loadsOf(before);
      loads['before: pages (200)'] = { origin: before.origin, load: theirs.pages };
      loads['before: polls (304)'] = { origin: before.origin, load: theirs.polls };
      await wrk(before.origin, theirs.pages, 2, options.connections);
    }
    await wrk(current.origin, mine.pages, 2, options.connections);
    const rounds = new Map<string, Figure['rounds']>();
    for (let round = 0; round < options.rounds; round++) {
      const names = Object.keys(loads);
      for (const name of round % 2 === 0 ? names : names.reverse()) {
        const { origin, load } = loads[name] ?? { origin: '', load: [] };
        const cpuBefore = process.cpuUsage();
        const run = await wrk(origin, load, options.seconds, options.connections);
        const cpu = process.cpuUsage(cpuBefore);
        if (run.errors > 0) throw new Error(`${name}: ${run.errors} errors`);
        rounds.set(name, [
          ...(rounds.get(name) ?? []),
          {
            serverCpuMicrosPerRequest: round1((cpu.user + cpu.system) / run.requests),
            p99Ms: run.p99Ms,
            rps: run.rps,
            loadAverage: loadavg()[0] ?? 0,
          },
        ]);
        console.error(`${name}: ${JSON.stringify(rounds.get(name)?.at(-1))}`);
      }
    }
    // Part 2: the same loads through app.inject, in short batches taking turns (200 requests each,
    // BENCH_INJECT_TURNS turns): on a busy machine the turns share its noise, so the ratios hold.
    const apps = new Map(served.map((each) => [each.origin, each.app]));
    const injected = new Map<string, { cpuMicros: number; requests: number }>();
    const turns = Number(process.env['BENCH_INJECT_TURNS'] ?? 100);
    let next = 0;
    for (let turn = 0; turn < turns; turn++) {
      for (const [name, { origin, load }] of Object.entries(loads)) {
        const app = apps.get(origin);
        if (app === undefined) continue;
        const cpuBefore = process.cpuUsage();
        for (let i = 0; i < 200; i++) {
          next = (next * 1103515245 + 12345) % 2 ** 31;
          const request = load[next % load.length];
          if (request === undefined) continue;
          await app.inject({
            method: 'GET',
            url: request.path,
            headers: { authorization: `Bearer ${request.key}`, ...request.headers },
          });
        }
        const cpu = process.cpuUsage(cpuBefore);
        const sum = injected.get(name) ?? { cpuMicros: 0, requests: 0 };
        sum.cpuMicros += cpu.user + cpu.system;
        sum.requests += 200;
        injected.set(name, sum);
      }
    }
    for (const [name, sum] of injected) {
      console.error(`inject ${name}: ${round1(sum.cpuMicros / sum.requests)} µs CPU per request`);
      injectedCpu[name] = round1(sum.cpuMicros / sum.requests);
    }
    return Object.fromEntries(
      [...rounds].map(([name, each]) => [
        name,
        {
          serverCpuMicrosPerRequest: median(each.map((r) => r.serverCpuMicrosPerRequest)),
          p99Ms: median(each.map((r) => r.p99Ms)),
          rps: median(each.map((r) => r.rps)),
          rounds: each,
        },
      ]),
    );
  } finally {
    for (const each of served) await each.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isEntryPoint(import.meta.url)) {
  const options = {
    orders: Number(process.env['BENCH_ORDERS'] ?? 50_000),
    seconds: Number(process.env['BENCH_SECONDS'] ?? 5),
    rounds: Number(process.env['BENCH_ROUNDS'] ?? 3),
    connections: Number(process.env['BENCH_CONNECTIONS'] ?? 8),
    baselineRoot: process.env['BENCH_BASELINE_ROOT'] ?? null,
  };
  const figures = await measurePositionCost(options);
  const at = new Date().toISOString();
  console.log(`read position cost, ${at}, Node ${process.version}, ${options.orders} orders\n`);
  console.log('| load | server CPU µs/request | p99 ms | req/s |\n|---|---|---|---|');
  for (const [name, f] of Object.entries(figures)) {
    console.log(`| ${name} | ${f.serverCpuMicrosPerRequest} | ${f.p99Ms} | ${f.rps} |`);
  }
  const results = join(projectRoot, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const out = join(results, `read-position-${at.replaceAll(':', '-').replace('.', '-')}.json`);
  console.log('\n| load | CPU µs/request through app.inject, turns of 200 |\n|---|---|');
  for (const [name, micros] of Object.entries(injectedCpu)) console.log(`| ${name} | ${micros} |`);
  const run = { at, node: process.version, loadAverage: loadavg(), options, figures, injectedCpu };
  writeFileSync(out, `${JSON.stringify(run, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
}

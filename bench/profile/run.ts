/**
 * bench:profile: where a request's CPU goes in the service and in the floor, by category, from V8
 * CPU profiles of every thread (`--cpu-prof`), on the same files and the same requests:
 *
 *   npm run bench:profile -- [--orders 100000] [--rate 1000] [--seconds 20] [--rounds 2]
 *                            [--before DIR] [--keep DIR]
 *
 * The service ingests the data set; then, for `/orders?limit=50` and for articles, in `--rounds`
 * rounds (ABBA), each side is started with the profiler, warmed up with a closed loop of 5 s and
 * sent `--rate` requests per second for `--seconds` (wrk). Only the samples inside that load count.
 * The samples give each category's share of the main thread's time (where requests are answered);
 * that share times the thread's CPU from /proc (`MainThread`) is the category's µs of CPU per
 * answered request, and the same for the worker threads (`WorkerThread`: the service's consumers). A sample's time is wall time, so shares, not the sampled sum, are what count on a busy
 * machine. /proc also gives the other threads by name (V8's helpers, libuv's pool), and the side's
 * whole CPU less the profiler's own threads (`v8:ProfEvntProc`, one per profiled thread). The
 * profiler's sampling still runs on the threads it samples, so every figure is an upper bound of
 * the same side unprofiled: bench:floor gives the unprofiled ratios.
 * `--before DIR`: a checkout of an earlier commit, built (`npm ci && npm run build`), profiled as a
 * third side on a model of its own ingest, started with this checkout's Node flags; its figures
 * less the floor's compare a model file of its own version with the floor reading this one's.
 * The service logs at the default level (`info`).
 * Writes bench/results/profile-<UTC date-time>.json and prints service − floor by category.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { appliedMessages } from '../../tools/model-progress.js';
import { ModelFiles } from '../../src/read-model/files.js';
import {
  benchDataOf,
  dataSetFor,
  root,
  startServiceProcess,
  useBuiltService,
  warmPageCache,
  waitUntil,
} from '../lib.js';
import { apiLoads, sampleSourceOf, type Endpoint } from '../peer.js';
import { assertSameAnswers, compareAnswers, sampleRequests } from '../peers/compare.js';
import { buildPeer } from '../peers/postgres/process.js';
import { treeCpuMs } from '../peers/proc.js';
import { spread } from '../peers/rounds.js';
import { threadCpuMs, threadTicks } from '../peers/threads.js';
import { requestSequence, wrk, writeSequence, type SequenceFile } from '../peers/wrk.js';
import { note, phase } from '../progress.js';
import { startFloorProcess } from '../floor/process.js';
import {
  categories,
  isMainThreadProfile,
  profileTimeByCategory,
  scaledToCpu,
  type Category,
  type CpuProfile,
} from './categories.js';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '100000' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    before: { type: 'string' },
    keep: { type: 'string' },
  },
});
const [orders, rate, seconds, rounds] = [values.orders, values.rate, values.seconds, values.rounds].map(
  Number,
) as [number, number, number, number];
if (![orders, rate, seconds, rounds].every((n) => Number.isInteger(n) && n >= 1))
  throw new Error('--orders, --rate, --seconds and --rounds must be whole numbers of at least 1');

interface SideRun {
  requests: number;
  /** CPU of the side's processes from /proc over the load, µs per request */
  procMicros: number;
  /** the same less the profiler's own threads (`v8:ProfEvntProc`): the side's CPU, µs per request */
  unprofiledMicros: number;
  /** /proc's CPU of the threads that run JavaScript (`MainThread`, `WorkerThread`), µs per request */
  jsThreadMicros: number;
  /** the profiled threads' busy time over the load (wall time, so a descheduled thread counts), µs per request */
  sampledMicros: number;
  threads: number;
  /** the main thread's: each category's share of its samples, times its CPU (/proc): µs per request */
  byCategory: Partial<Record<Category, number>>;
  /** the same for the worker threads together (the service's Kafka consumers) */
  workersByCategory: Partial<Record<Category, number>>;
  /** /proc's CPU of the side's threads by thread name (V8's helpers, libuv's pool, …), µs per request */
  byThreadName: Record<string, number>;
}

interface Started {
  pid: number;
  origin: string;
  stop: () => Promise<void>;
}

const round1 = (n: number): number => Math.round(n * 10) / 10;
/** the name of V8's profiler thread, one per profiled thread: its CPU is the profiler's, not the side's */
const profilerThread = 'v8:ProfEvntProc';
const nowMicros = (): number => Number(process.hrtime.bigint() / 1000n);

async function profiled(
  start: (nodeOptions: string) => Promise<Started>,
  sequence: SequenceFile,
): Promise<SideRun> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  try {
    const side = await start(`--cpu-prof --cpu-prof-dir=${dir}`);
    let from: number, to: number, cpuMs: number, requests: number;
    const byThreadName: Record<string, number> = {};
    try {
      await wrk(side.origin, sequence, 5, 10);
      const cpuBefore = treeCpuMs([side.pid]);
      const ticksBefore = threadTicks(side.pid);
      from = nowMicros();
      const load = await wrk(side.origin, sequence, seconds, 50, { rate });
      to = nowMicros();
      cpuMs = treeCpuMs([side.pid]) - cpuBefore;
      requests = load.requests;
      // every thread that ran, however little, summed by name
      for (const thread of threadCpuMs(ticksBefore, threadTicks(side.pid), 0))
        byThreadName[thread.name] = (byThreadName[thread.name] ?? 0) + (thread.cpuMs * 1000) / requests;
      for (const name of Object.keys(byThreadName)) byThreadName[name] = round1(byThreadName[name]!);
      if (load.errors > 0) throw new Error(`${load.errors} requests failed`);
    } finally {
      await side.stop();
    }
    const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
    if (files.length === 0) throw new Error('the side wrote no CPU profile');
    const totals = { main: new Map<Category, number>(), workers: new Map<Category, number>() };
    for (const file of files) {
      const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
      const into = isMainThreadProfile(file) ? totals.main : totals.workers;
      for (const [category, us] of profileTimeByCategory(profile, from, to))
        into.set(category, (into.get(category) ?? 0) + us);
    }
    if (values.keep !== undefined) {
      const kept = join(values.keep, `${Date.now()}`);
      mkdirSync(kept, { recursive: true });
      for (const file of files) writeFileSync(join(kept, file), readFileSync(join(dir, file)));
    }
    const sum = (m: Map<Category, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
    const procMicros = (cpuMs * 1000) / requests;
    const mainMicros = byThreadName['MainThread'] ?? 0;
    const workerMicros = byThreadName['WorkerThread'] ?? 0;
    return {
      requests,
      procMicros: round1(procMicros),
      unprofiledMicros: round1(procMicros - (byThreadName[profilerThread] ?? 0)),
      jsThreadMicros: round1(mainMicros + workerMicros),
      sampledMicros: round1((sum(totals.main) + sum(totals.workers)) / requests),
      threads: files.length,
      byCategory: scaledToCpu(totals.main, mainMicros),
      workersByCategory: scaledToCpu(totals.workers, workerMicros),
      byThreadName,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

useBuiltService();
buildPeer();
const data = benchDataOf(orders);
const broker = await phase(`data: ${orders} orders on a broker`, () =>
  dataSetFor(undefined, 'bench-profile', data),
);
const dirs: string[] = [];
const ingested = async (serviceRoot?: string): Promise<string> => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-profile-data-'));
  dirs.push(dataDir);
  const service = await startServiceProcess(broker.brokers, broker.topics, dataDir, {}, serviceRoot);
  try {
    await waitUntil(
      'the model holds every message',
      () => appliedMessages(dataDir) >= broker.total,
      30 * 60_000,
    );
  } finally {
    await service.stop();
  }
  return dataDir;
};
try {
  const dataDir = await phase('ingest: the service', () => ingested());
  const beforeDir =
    values.before === undefined ? undefined : await phase('ingest: --before', () => ingested(values.before));
  const modelFile = new ModelFiles(dataDir).currentFile()!;
  const source = sampleSourceOf(modelFile, data);
  const loads = apiLoads(data, source.listedOf(1));

  const service =
    (dir: string, serviceRoot?: string) =>
    async (nodeOptions: string): Promise<Started> => {
      const started = await startServiceProcess(
        broker.brokers,
        broker.topics,
        dir,
        { LOG_LEVEL: 'info', NODE_OPTIONS: nodeOptions },
        serviceRoot,
      );
      await waitUntil(
        'ready',
        async () => (await fetch(`http://127.0.0.1:${started.adminPort}/readyz`)).ok,
        120_000,
      );
      warmPageCache(new ModelFiles(dir).currentFile()!);
      return {
        pid: started.child.pid ?? 0,
        origin: `http://127.0.0.1:${started.httpPort}`,
        stop: started.stop,
      };
    };
  const floor = async (nodeOptions: string): Promise<Started> => {
    const started = await startFloorProcess('floor', dataDir, 'dist', { NODE_OPTIONS: nodeOptions });
    return { pid: started.child.pid ?? 0, origin: started.origin, stop: started.stop };
  };
  const sides: [string, (nodeOptions: string) => Promise<Started>][] = [
    ['floor', floor],
    ['service', service(dataDir)],
    ...(beforeDir === undefined
      ? []
      : [['before', service(beforeDir, values.before)] as [string, typeof floor]]),
  ];

  // The same answers first: the floor against the service, on a sample of every kind of request.
  {
    const [serviceSide, floorSide] = [await sides[1]![1](''), await floor('')];
    try {
      const requests = sampleRequests(source);
      assertSameAnswers(
        requests,
        (await compareAnswers(serviceSide.origin, floorSide.origin, requests)).differences,
        'floor',
      );
      note(`answers: all ${requests.length} equal`);
    } finally {
      await serviceSide.stop();
      await floorSide.stop();
    }
  }

  const runs: Record<Endpoint, Record<string, SideRun[]>> = { orders: {}, articles: {} };
  for (const endpoint of ['orders', 'articles'] as const) {
    const sequence = writeSequence(requestSequence(loads[endpoint], 200_000, data.seed));
    try {
      for (let r = 0; r < rounds; r += 1)
        for (const [name, start] of r % 2 === 0 ? sides : [...sides].reverse()) {
          const run = await phase(`${endpoint}, round ${r + 1}: ${name}`, () => profiled(start, sequence));
          note(
            `${name}: ${run.unprofiledMicros} µs/request from /proc less the profiler, ${run.jsThreadMicros} in the JavaScript threads, ${run.sampledMicros} sampled in ${run.threads}; by thread name: ${JSON.stringify(run.byThreadName)}`,
          );
          (runs[endpoint][name] ??= []).push(run);
        }
    } finally {
      sequence.remove();
    }
  }

  const threadNames = [
    ...new Set(
      Object.values(runs).flatMap((bySide) =>
        Object.values(bySide)
          .flat()
          .flatMap((run) => Object.keys(run.byThreadName)),
      ),
    ),
  ].sort();
  const totalRows: Record<string, (run: SideRun) => number> = {
    'JavaScript threads (/proc)': (run) => run.jsThreadMicros,
    'the side, less the profiler (/proc)': (run) => run.unprofiledMicros,
    'profiled threads, sampled (wall time)': (run) => run.sampledMicros,
  };
  const rows = [
    ...categories.map((c) => `main thread: ${c}`),
    ...categories.map((c) => `worker threads: ${c}`),
    ...Object.keys(totalRows),
    ...threadNames.map((name) => `/proc, threads named ${name}`),
  ];
  const figureOf = (run: SideRun, row: string): number =>
    totalRows[row] !== undefined
      ? totalRows[row](run)
      : row.startsWith('/proc, threads named ')
        ? (run.byThreadName[row.slice('/proc, threads named '.length)] ?? 0)
        : row.startsWith('main thread: ')
          ? (run.byCategory[row.slice('main thread: '.length) as Category] ?? 0)
          : (run.workersByCategory[row.slice('worker threads: '.length) as Category] ?? 0);
  const summary: Record<string, Record<string, Record<string, number>>> = {};
  let table = '';
  for (const endpoint of ['orders', 'articles'] as const) {
    const names = Object.keys(runs[endpoint]);
    summary[endpoint] = {};
    for (const name of names)
      summary[endpoint][name] = Object.fromEntries(
        rows.map((row) => [
          row,
          round1(spread(runs[endpoint][name]!.map((run) => figureOf(run, row))).median),
        ]),
      );
    const others = names.filter((n) => n !== 'floor');
    table += `\n${endpoint}: µs per request, median of ${rounds} rounds\n| category | ${names.join(' | ')} | ${others.map((n) => `${n} − floor`).join(' | ')} |\n`;
    for (const row of rows) {
      const f = (n: string): number => summary[endpoint]![n]![row]!;
      if (names.every((n) => f(n) === 0)) continue;
      table += `| ${row} | ${names.map((n) => f(n)).join(' | ')} | ${others.map((n) => round1(f(n) - f('floor'))).join(' | ')} |\n`;
    }
  }
  console.log(table);
  const file = join(
    root,
    'bench',
    'results',
    `profile-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(
    file,
    `${JSON.stringify({ orders, rate, seconds, rounds, node: process.version, before: values.before ?? null, summary, runs }, null, 2)}\n`,
  );
  note(`results: ${file}`);
} finally {
  await broker.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/**
 * Reads across cores: the built service with HTTP_WORKERS=1 against HTTP_WORKERS=N, side by side in
 * one run on one data set:
 *   npm run bench:workers -- [--orders 100000] [--workers 2] [--seconds 10] [--warmup 3]
 * [--connections 10] [--rounds 2]
 * One ingest, then a copy of the model for each side (both serve at once, on their own data
 * directories), the same answers from both to a sample of requests of every kind (the run stops if
 * one differs), then `/orders?limit=50` and articles under wrk (one thread of its own), in rounds
 * ABBA: req/s, p99, server CPU per request, the cores wrk took, and peak memory of each side.
 * Prints the figures and the ratio N / 1; writes bench/results/workers-<UTC date-time>.json.
 * KAFKA_BROKERS names a broker, else the project's local one is started.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isEntryPoint } from '../tools/harness.js';
import { appliedMessages } from '../tools/model-progress.js';
import { ModelFiles } from '../src/read-model/files.js';
import {
  benchDataOf,
  benchKeyOf,
  dataSetFor,
  keyedOrganizations,
  startServiceProcess,
  useBuiltService,
  waitUntil,
  warmPageCache,
  type BenchData,
  type DataSetOnBroker,
  type ServiceProcess,
} from './lib.js';
import { sampleSourceOf } from './peer.js';
import { assertSameAnswers, compareAnswers, sampleRequests } from './peers/compare.js';
import { memoryPeaks, treeCpuMs } from './peers/proc.js';
import { wrk, type WrkRequest } from './peers/wrk.js';
import { counterProbe, note, phase } from './progress.js';
import { numericOptions, reportRun } from './cli.js';
import { type Figure } from './run.js';

export interface WorkersBenchOptions {
  data: BenchData;
  workers: number;
  seconds: number;
  warmUp: number;
  connections: number;
  rounds: number;
  /** the data set of a full run (`npm run bench`); else one published on a broker of its own */
  dataSet?: DataSetOnBroker;
}

interface Load {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  serverCpuMicrosPerRequest: number;
  /** cores the service used / cores wrk used, over the measured seconds */
  serverCores: number;
  wrkCores: number;
  rounds: { rps: number; p99Ms: number; loadAverage: number }[];
}

export interface WorkersBenchResults {
  messages: number;
  sample: { requests: number; differences: 0 };
  /** keyed by HTTP_WORKERS */
  sides: Record<string, { api: { orders: Load; articles: Load }; peakRssMb: number; peakPssMb: number }>;
  ratios: { ordersRps: number; articlesRps: number };
  goal: { goal: string; orders: boolean; articles: boolean };
}

export async function runWorkersBench(options: WorkersBenchOptions): Promise<{
  figures: Figure[];
  results: WorkersBenchResults;
}> {
  const { data } = options;
  const dir = mkdtempSync(join(tmpdir(), 'bench-workers-'));
  const broker = await dataSetFor(options.dataSet, 'bench-workers', data).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const { topics, messages, total } = broker;
  const running: { service: ServiceProcess; stopTracking: () => void }[] = [];
  try {
    const first = join(dir, 'one');
    const ingesting = await startServiceProcess(broker.brokers, topics, first);
    running.push({ service: ingesting, stopTracking: () => undefined });
    await phase(
      'ingest: the service projects every topic',
      () => waitUntil('the model holds every event', () => appliedMessages(first) >= total, 60 * 60_000),
      counterProbe('events', () => appliedMessages(first), total),
    );
    await ingesting.stop();
    const second = join(dir, 'many');
    cpSync(first, second, { recursive: true });

    const sides = [
      { workers: 1, dataDir: first },
      { workers: options.workers, dataDir: second },
    ];
    const started = await phase('api: both sides start on their copies of the model', () =>
      Promise.all(
        sides.map(async (side) => {
          const service = await startServiceProcess(broker.brokers, topics, side.dataDir, {
            HTTP_WORKERS: String(side.workers),
          });
          const tracked = memoryPeaks(() => [service.child.pid ?? 0]);
          running.push({ service, stopTracking: tracked.stop });
          await waitUntil(
            `HTTP_WORKERS=${side.workers} answers`,
            async () =>
              (await fetch(`http://127.0.0.1:${service.adminPort}/readyz`).catch(() => null))?.status === 200,
            10 * 60_000,
          );
          const file = new ModelFiles(side.dataDir).currentFile();
          if (file !== null) warmPageCache(file);
          return { ...side, service, tracked, origin: `http://127.0.0.1:${service.httpPort}` };
        }),
      ),
    );
    const [one, many] = started as [(typeof started)[0], (typeof started)[0]];
    const modelFile = new ModelFiles(first).currentFile();
    if (modelFile === null) throw new Error(`no model file in ${first}`);
    const source = sampleSourceOf(modelFile, data);
    const requests = sampleRequests(source);
    const compared = await phase(`answers: ${requests.length} sample requests to both`, () =>
      compareAnswers(one.origin, many.origin, requests),
    );
    assertSameAnswers(requests, compared.differences);
    note(`answers: all ${requests.length} equal`);

    const loads: Record<'orders' | 'articles', WrkRequest[]> = {
      orders: keyedOrganizations(data).map((org) => ({
        path: '/api/external-api/v1/orders?limit=50',
        key: benchKeyOf(org),
      })),
      articles: source.listedOf(1).map((id) => ({
        path: `/api/external-api/v1/orders/${id}/articles`,
        key: benchKeyOf(1),
      })),
    };
    const results: WorkersBenchResults['sides'] = {};
    const api: Record<number, Partial<Record<'orders' | 'articles', Load>>> = { 1: {}, [many.workers]: {} };
    for (const endpoint of ['orders', 'articles'] as const) {
      const runs = new Map<
        number,
        {
          rps: number;
          requests: number;
          seconds: number;
          p50Ms: number;
          p99Ms: number;
          cpuMs: number;
          wrkCpuMs: number;
          loadAverage: number;
        }[]
      >();
      for (let round = 0; round < options.rounds; round++) {
        // ABBA: a drift of the shared machine's speed weighs on both sides alike
        for (const side of round % 2 === 0 ? [one, many] : [many, one]) {
          const name = `HTTP_WORKERS=${side.workers} ${endpoint}`;
          note(`api ${name}: ${options.warmUp} s warm-up, then ${options.seconds} s measured`);
          if (options.warmUp > 0)
            await wrk(side.origin, loads[endpoint], options.warmUp, options.connections);
          const pid = side.service.child.pid ?? 0;
          const before = treeCpuMs([pid]);
          const r = await wrk(side.origin, loads[endpoint], options.seconds, options.connections);
          const cpuMs = treeCpuMs([pid]) - before;
          if (r.errors > 0) throw new Error(`api ${name}: ${r.errors} requests failed or were refused`);
          note(
            `api ${name}: ${r.rps} req/s, p99 ${r.p99Ms} ms, ${((cpuMs * 1000) / r.requests).toFixed(1)} µs server CPU/request, server ${(cpuMs / 1000 / r.seconds).toFixed(2)} cores, wrk ${(r.wrkCpuMs / 1000 / r.seconds).toFixed(2)} cores, load average ${loadavg()[0]!.toFixed(1)}`,
          );
          runs.set(side.workers, [
            ...(runs.get(side.workers) ?? []),
            { ...r, cpuMs, loadAverage: loadavg()[0]! },
          ]);
        }
      }
      for (const [workers, measured] of runs) {
        const requests = measured.reduce((sum, r) => sum + r.requests, 0);
        const seconds = measured.reduce((sum, r) => sum + r.seconds, 0);
        const cpuMs = measured.reduce((sum, r) => sum + r.cpuMs, 0);
        const mean = (values: number[]): number =>
          Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 1000) / 1000;
        api[workers]![endpoint] = {
          rps: Math.round(requests / seconds),
          p50Ms: mean(measured.map((r) => r.p50Ms)),
          p99Ms: mean(measured.map((r) => r.p99Ms)),
          serverCpuMicrosPerRequest: Math.round((cpuMs * 10000) / requests) / 10,
          serverCores: Math.round((cpuMs / 1000 / seconds) * 100) / 100,
          wrkCores:
            Math.round((measured.reduce((sum, r) => sum + r.wrkCpuMs, 0) / 1000 / seconds) * 100) / 100,
          rounds: measured.map((r) => ({
            rps: r.rps,
            p99Ms: r.p99Ms,
            loadAverage: Math.round(r.loadAverage * 10) / 10,
          })),
        };
      }
    }
    for (const side of started) {
      results[String(side.workers)] = {
        api: api[side.workers] as { orders: Load; articles: Load },
        peakRssMb: side.tracked.peaks().rss,
        peakPssMb: side.tracked.peaks().pss,
      };
    }
    const ratio = (endpoint: 'orders' | 'articles'): number =>
      Math.round(
        (results[String(many.workers)]!.api[endpoint].rps / results['1']!.api[endpoint].rps) * 1000,
      ) / 1000;
    const ratios = { ordersRps: ratio('orders'), articlesRps: ratio('articles') };
    const summary: WorkersBenchResults = {
      messages: messages,
      sample: { requests: requests.length, differences: 0 },
      sides: results,
      ratios,
      goal: {
        goal: `${many.workers} workers ≥ 1.6 × the req/s of 1 worker`,
        orders: ratios.ordersRps >= 1.6,
        articles: ratios.articlesRps >= 1.6,
      },
    };
    return { figures: figuresOf(data, summary, many.workers), results: summary };
  } finally {
    for (const { service, stopTracking } of running) {
      stopTracking();
      if (service.child.exitCode === null) await service.stop().catch(() => undefined);
    }
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function figuresOf(data: BenchData, r: WorkersBenchResults, workers: number): Figure[] {
  const load = (l: Load): string =>
    `${l.rps} req/s, p50 ${l.p50Ms.toFixed(2)} ms, p99 ${l.p99Ms.toFixed(2)} ms; ${l.serverCpuMicrosPerRequest} µs server CPU/request (server ${l.serverCores} cores, wrk ${l.wrkCores}; rounds: ${l.rounds.map((x) => `${x.rps} req/s load ${x.loadAverage}`).join(', ')})`;
  const one = r.sides['1']!;
  const many = r.sides[String(workers)]!;
  return [
    {
      name: 'data set',
      value: `${r.messages} messages: ${data.orders} orders, ${data.organizations} organizations; ${r.sample.requests} sample requests answered alike by both`,
    },
    {
      name: '/orders?limit=50, random organizations',
      value: `HTTP_WORKERS=${workers}: ${load(many.api.orders)}`,
      baseline: `HTTP_WORKERS=1: ${load(one.api.orders)}`,
      ratio: r.ratios.ordersRps,
      target: `${r.goal.goal}: ${r.goal.orders ? 'met' : 'not met'}`,
    },
    {
      name: '/orders/{id}/articles, listed orders of organization 1',
      value: `HTTP_WORKERS=${workers}: ${load(many.api.articles)}`,
      baseline: `HTTP_WORKERS=1: ${load(one.api.articles)}`,
      ratio: r.ratios.articlesRps,
      target: `${r.goal.goal}: ${r.goal.articles ? 'met' : 'not met'}`,
    },
    {
      name: 'peak memory of the service process (PSS; RSS)',
      value: `HTTP_WORKERS=${workers}: ${many.peakPssMb} MB; ${many.peakRssMb} MB`,
      baseline: `HTTP_WORKERS=1: ${one.peakPssMb} MB; ${one.peakRssMb} MB`,
      ratio: Math.round((many.peakPssMb / one.peakPssMb) * 1000) / 1000,
    },
  ];
}

const usage =
  'usage: npm run bench:workers -- [--orders N] [--workers N] [--seconds N] [--warmup N] [--connections N] [--rounds N]';

if (isEntryPoint(import.meta.url)) {
  const n = numericOptions(
    { orders: 100_000, workers: 2, seconds: 10, warmup: 3, connections: 10, rounds: 2 },
    usage,
    { workers: 2, warmup: 0 },
  );
  const options: WorkersBenchOptions = {
    data: benchDataOf(n.orders),
    workers: n.workers,
    seconds: n.seconds,
    warmUp: n.warmup,
    connections: n.connections,
    rounds: n.rounds,
  };
  useBuiltService();
  const started = new Date();
  runWorkersBench(options)
    .then(({ figures, results }) => reportRun('workers', started, options, figures, { workers: results }))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}

/**
 * Reads across cores: the built service with HTTP_WORKERS=1 against HTTP_WORKERS=N, side by side in
 * one run on one data set:
 *   npm run bench:workers -- [--orders 100000] [--workers 2] [--seconds 8] [--warmup 5]
 * [--connections 10] [--more-connections 40] [--rounds 5]
 * One ingest, then a copy of the model for each side (both serve at once, on their own data
 * directories), the same answers from both to a sample of requests of every kind (the run stops if
 * one differs), then `/orders?limit=50` and articles in closed loops at `--connections` and at
 * `--more-connections`, in rounds ABBA on one pre-generated request sequence (bench/peers/rounds.ts):
 * req/s, p99, server CPU per request, the cores wrk took, and for every load how the side's threads
 * shared it (bench/peers/threads.ts): each thread's CPU time, and each event loop's connections and
 * requests. Prints the figures and the per-round ratios N / 1; writes
 * bench/results/workers-<UTC date-time>.json. KAFKA_BROKERS names a broker, else the project's local
 * one is started.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isEntryPoint } from '../tools/harness.js';
import { appliedMessages } from '../tools/model-progress.js';
import { ModelFiles } from '../src/read-model/files.js';
import {
  benchDataOf,
  dataSetFor,
  startServiceProcess,
  useBuiltService,
  waitUntil,
  warmPageCache,
  type BenchData,
  type DataSetOnBroker,
  type ServiceProcess,
} from './lib.js';
import { apiLoads, checkpointModel, sampleSourceOf, type Endpoint } from './peer.js';
import { assertSameAnswers, compareAnswers, sampleRequests } from './peers/compare.js';
import { loadSampler, memoryPeaks, type LoadSummary } from './peers/proc.js';
import {
  roundRatios,
  runRounds,
  sideSpread,
  type RoundsResult,
  type Side,
  type Spread,
} from './peers/rounds.js';
import { sampleLoopShares, threadCpuMs, threadTicks } from './peers/threads.js';
import { requestSequence, writeSequence } from './peers/wrk.js';
import { counterProbe, note, phase } from './progress.js';
import { numericOptions, reportRun } from './cli.js';
import { type Figure } from './run.js';

export interface WorkersBenchOptions {
  data: BenchData;
  workers: number;
  seconds: number;
  warmUp: number;
  /** the closed loops' connections, then more of them */
  connections: number;
  moreConnections: number;
  rounds: number;
  /** the data set of a full run (`npm run bench`); else one published on a broker of its own */
  dataSet?: DataSetOnBroker;
}

export interface WorkersBenchResults {
  messages: number;
  loadAverage: LoadSummary;
  sample: { requests: number; differences: 0 };
  /** by connections, then endpoint: the rounds of both sides (named HTTP_WORKERS=1 and =N) */
  loads: Record<string, Record<Endpoint, RoundsResult>>;
  /** peak memory of each side, by HTTP_WORKERS */
  memory: Record<string, { peakRssMb: number; peakPssMb: number }>;
  /** N ÷ 1 of the closed loops' req/s, each round, by connections, then endpoint */
  ratios: Record<string, Record<Endpoint, Spread>>;
  goal: { goal: string; met: Record<string, Record<Endpoint, boolean>> };
}

const sideName = (workers: number): string => `HTTP_WORKERS=${workers}`;

export async function runWorkersBench(options: WorkersBenchOptions): Promise<{
  figures: Figure[];
  results: WorkersBenchResults;
}> {
  const { data } = options;
  const load = loadSampler();
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

    const started = await phase('api: both sides start on their copies of the model', () =>
      Promise.all(
        [
          { workers: 1, dataDir: first },
          { workers: options.workers, dataDir: second },
        ].map(async (side) => {
          const service = await startServiceProcess(broker.brokers, topics, side.dataDir, {
            HTTP_WORKERS: String(side.workers),
          });
          const tracked = memoryPeaks(() => [service.child.pid ?? 0]);
          running.push({ service, stopTracking: tracked.stop });
          await waitUntil(
            `${sideName(side.workers)} answers`,
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

    const loads = apiLoads(data, source.listedOf(1));
    const sides = started.map((side): Side => ({
      name: sideName(side.workers),
      origin: side.origin,
      roots: () => [side.service.child.pid ?? 0],
      checkpoint: () => Promise.resolve(checkpointModel(side.dataDir)),
      observe: () => {
        const pid = side.service.child.pid ?? 0;
        const before = threadTicks(pid);
        const loops = sampleLoopShares(pid, side.service.httpPort);
        return () => ({ eventLoops: loops(), threadsCpuMs: threadCpuMs(before, threadTicks(pid)) });
      },
    }));
    const results: WorkersBenchResults['loads'] = {};
    const ratios: WorkersBenchResults['ratios'] = {};
    const met: WorkersBenchResults['goal']['met'] = {};
    for (const connections of [...new Set([options.connections, options.moreConnections])]) {
      const byEndpoint = {} as Record<Endpoint, RoundsResult>;
      for (const endpoint of ['orders', 'articles'] as const) {
        const sequence = writeSequence(requestSequence(loads[endpoint], 200_000, data.seed));
        try {
          byEndpoint[endpoint] = await phase(`api ${endpoint}, ${connections} connections`, () =>
            runRounds(sides, {
              sequence,
              seconds: options.seconds,
              warmUpSeconds: options.warmUp,
              connections,
              rounds: options.rounds,
              rates: () => [],
              rateConnections: connections,
              loadSince: load.summary,
            }),
          );
        } finally {
          sequence.remove();
        }
      }
      results[connections] = byEndpoint;
      ratios[connections] = {
        orders: roundRatios(byEndpoint.orders, sideName(many.workers), sideName(1), (m) => m.rps),
        articles: roundRatios(byEndpoint.articles, sideName(many.workers), sideName(1), (m) => m.rps),
      };
      met[connections] = {
        orders: ratios[connections].orders.min >= 1.6,
        articles: ratios[connections].articles.min >= 1.6,
      };
    }
    const summary: WorkersBenchResults = {
      messages,
      loadAverage: load.summary(),
      sample: { requests: requests.length, differences: 0 },
      loads: results,
      memory: Object.fromEntries(
        started.map((side) => [
          String(side.workers),
          { peakRssMb: side.tracked.peaks().rss, peakPssMb: side.tracked.peaks().pss },
        ]),
      ),
      ratios,
      goal: { goal: `${many.workers} workers ≥ 1.6 × the req/s of 1 worker in the worst round`, met },
    };
    return { figures: figuresOf(data, summary, many.workers), results: summary };
  } finally {
    load.stop();
    for (const { service, stopTracking } of running) {
      stopTracking();
      if (service.child.exitCode === null) await service.stop().catch(() => undefined);
    }
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function figuresOf(data: BenchData, r: WorkersBenchResults, workers: number): Figure[] {
  const figures: Figure[] = [
    {
      name: 'data set',
      value: `${r.messages} messages: ${data.orders} orders, ${data.organizations} organizations; ${r.sample.requests} sample requests answered alike by both; load average over the run ${r.loadAverage.mean} (${r.loadAverage.min}–${r.loadAverage.max})`,
    },
  ];
  const many = sideName(workers);
  for (const [connections, byEndpoint] of Object.entries(r.loads)) {
    for (const endpoint of ['orders', 'articles'] as const) {
      const rounds = byEndpoint[endpoint];
      const side = (name: string): string => {
        const rps = sideSpread(rounds, name, (m) => m.rps);
        const cpu = sideSpread(rounds, name, (m) => m.serverCpuMicrosPerRequest);
        const cores = sideSpread(rounds, name, (m) => m.serverCores);
        const wrkCores = sideSpread(rounds, name, (m) => m.wrkCores);
        const last = rounds.rounds.at(-1)?.closed[name]?.observed as
          { eventLoops: { connections: number; requests: number }[] } | undefined;
        const loops = (last?.eventLoops ?? [])
          .map((l) => `${l.connections} conn/${l.requests} req`)
          .join(' + ');
        return `${rps.median} req/s (${rps.min}–${rps.max}), ${cpu.median} µs server CPU/request, server ${cores.median} cores, wrk ${wrkCores.median}; event loops of the last round: ${loops}`;
      };
      const ratio = r.ratios[connections]![endpoint];
      figures.push({
        name: `${endpoint === 'orders' ? '/orders?limit=50, random organizations' : '/orders/{id}/articles, listed orders of organization 1'}, ${connections} connections`,
        value: `${many}: ${side(many)}`,
        baseline: `HTTP_WORKERS=1: ${side(sideName(1))}`,
        ratio: ratio.median,
        target: `rounds ${ratio.min}–${ratio.max}; ${r.goal.goal}: ${r.goal.met[connections]![endpoint] ? 'met' : 'not met'}`,
      });
    }
  }
  const one = r.memory['1']!;
  const n = r.memory[String(workers)]!;
  figures.push({
    name: 'peak memory of the service process (PSS; RSS)',
    value: `${many}: ${n.peakPssMb} MB; ${n.peakRssMb} MB`,
    baseline: `HTTP_WORKERS=1: ${one.peakPssMb} MB; ${one.peakRssMb} MB`,
    ratio: Math.round((n.peakPssMb / one.peakPssMb) * 1000) / 1000,
  });
  return figures;
}

const usage =
  'usage: npm run bench:workers -- [--orders N] [--workers N] [--seconds N] [--warmup N] [--connections N] [--more-connections N] [--rounds N]';

if (isEntryPoint(import.meta.url)) {
  const n = numericOptions(
    {
      orders: 100_000,
      workers: 2,
      seconds: 8,
      warmup: 5,
      connections: 10,
      'more-connections': 40,
      rounds: 5,
    },
    usage,
    { workers: 2 },
  );
  const options: WorkersBenchOptions = {
    data: benchDataOf(n.orders),
    workers: n.workers,
    seconds: n.seconds,
    warmUp: n.warmup,
    connections: n.connections,
    moreConnections: n['more-connections'],
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

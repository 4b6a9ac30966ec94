/**
 * Benchmarks with baselines measured in the same run (the ratio is the figure
 * that counts on a 2-core machine whose absolute speed drifts).
 *   npm run bench:ingest | bench:rebuild | bench:api | bench   (bench = all three, one data set)
 * BENCH_ORDERS (default 1 000 000), BENCH_API_SECONDS (default 10), BENCH_NEW_EVENTS (default 1 000 000),
 * BENCH_COMPRESSION (codec of the produced batches: none, gzip, snappy, lz4, zstd; default none).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort } from '../scripts/local-kafka.js';
import { appliedMessages, topicEndOffsets } from '../scripts/model-progress.js';
import { loopbackServiceEnv } from '../scripts/service-env.js';
import { API_PREFIX } from '../schemas/api.js';
import { ModelFiles } from '../src/read-model/files.js';
import type { TopicRole } from '../schemas/events.js';
import {
  benchBroker,
  benchKeyOf,
  createBenchTopics,
  defaultData,
  endOffsetsVia,
  kafkaOf,
  keyedOrganizations,
  minimalProjector,
  parseEveryValue,
  publishBenchData,
  rate,
  rawConsume,
  root,
  startServiceProcess,
  timeIngest,
  waitFor,
  type BenchData,
} from './lib.js';

export interface Figure {
  name: string;
  value: string;
  baseline?: string;
  ratio?: number;
  target?: string;
}

interface Context {
  brokers: string;
  topics: Record<TopicRole, string>;
  data: BenchData;
  messages: number;
  dir: string;
}

async function setUp(
  data: BenchData,
): Promise<{ ctx: Context; close: () => Promise<void>; figures: Figure[] }> {
  const broker = await benchBroker();
  const kafka = kafkaOf(broker.brokers);
  const topics = await createBenchTopics(kafka, `bench-${Date.now()}`);
  const produced = await publishBenchData(kafka, topics, data);
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const figures: Figure[] = [
    {
      name: 'data set',
      value: `${produced.messages} messages: ${data.orders} orders, ${data.organizations} organizations, organization 1 with ${data.largeOrganizationOrders}`,
    },
    { name: 'produce', value: `${rate(produced.messages, produced.ms)} msg/s` },
  ];
  return {
    ctx: { brokers: broker.brokers, topics, data, messages: produced.messages, dir },
    figures,
    close: async () => {
      rmSync(dir, { recursive: true, force: true });
      await broker.close();
    },
  };
}

/** (a) raw consumer, (b) the projector (the service process) into a fresh model; leaves the model in ctx.dir/data. */
export async function benchIngest(ctx: Context): Promise<Figure[]> {
  const kafka = kafkaOf(ctx.brokers);
  const total = await topicEndOffsets(endOffsetsVia(kafka), Object.values(ctx.topics));
  const raw = await rawConsume(kafka, ctx.topics, total);
  const parsed = await rawConsume(kafka, ctx.topics, total, parseEveryValue);
  const minimal = minimalProjector(ctx.dir);
  const written = await rawConsume(kafka, ctx.topics, total, minimal.handle);
  minimal.close();
  const dataDir = join(ctx.dir, 'data');
  const service = await startServiceProcess(ctx.brokers, ctx.topics, dataDir);
  const projected = await timeIngest(dataDir, total, 30 * 60_000);
  const rss = service.peakRssMb();
  await service.stop();
  const a = rate(total, raw.ms);
  const againstRaw = (name: string, eventsPerSecond: number, target: string): Figure => ({
    name: `ingest ${name}`,
    value: `${eventsPerSecond} events/s`,
    baseline: `${a} events/s`,
    ratio: eventsPerSecond / a,
    target,
  });
  return [
    { name: 'ingest (a) raw kafkajs eachBatch, no-op', value: `${a} events/s` },
    againstRaw(
      '(a2) raw eachBatch that only decodes each value (UTF-8 + JSON.parse)',
      rate(total, parsed.ms),
      'ceiling of b/a: any projector reads its events',
    ),
    againstRaw(
      '(a3) raw eachBatch that decodes each value and inserts one row for it, one SQLite transaction per batch',
      rate(total, written.ms),
      'ceiling of b/a: a durable projector writes what it reads',
    ),
    againstRaw('(b) projector into SQLite', rate(total, projected.ms), '≥ 0.7 and ≥ 50 000 events/s'),
    { name: 'ingest peak RSS of the service', value: `${rss} MB` },
  ];
}

/** `rebuild` CLI over the same topics, against the raw consumer rate of the same run. */
export async function benchRebuild(ctx: Context): Promise<Figure[]> {
  const kafka = kafkaOf(ctx.brokers);
  const total = await topicEndOffsets(endOffsetsVia(kafka), Object.values(ctx.topics));
  const raw = await rawConsume(kafka, ctx.topics, total);
  const started = Date.now();
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'main.ts'), 'rebuild', '--no-promote'],
      {
        cwd: root,
        env: loopbackServiceEnv({
          brokers: ctx.brokers,
          groupId: `bench-rebuild-${Date.now()}`,
          topics: ctx.topics,
          dataDir: join(ctx.dir, 'rebuild'),
          logLevel: 'warn',
        }),
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`rebuild exited ${code}: ${out}`)),
    );
  });
  const wallMs = Date.now() - started;
  const match = /Rebuilt (\d+) messages in ([\d.]+) s/.exec(output);
  const seconds = Number(match?.[2] ?? wallMs / 1000);
  const events = Number(match?.[1] ?? total);
  const per1M = (seconds / events) * 1_000_000;
  const a = rate(total, raw.ms);
  const r = rate(events, seconds * 1000);
  return [
    {
      name: 'rebuild (whole command, incl. group join)',
      value: `${events} events in ${seconds.toFixed(1)} s = ${r} events/s (${per1M.toFixed(1)} s per 1 000 000; ${(wallMs / 1000).toFixed(1)} s process wall time)`,
      baseline: `${a} events/s raw`,
      ratio: r / a,
      target: '≤ 30 s per 1 000 000 events',
    },
  ];
}

interface Load {
  name: string;
  url: string;
  paths?: () => string;
  key?: () => string;
}

/** Seconds of each API figure: `measure`, after `warmUp` seconds of the same load, discarded. */
interface ApiSeconds {
  measure: number;
  /** the figure is the steady state (JIT compiled, page cache warm), not a process's first seconds */
  warmUp: number;
}

async function cannon(
  load: Load,
  seconds: ApiSeconds,
): Promise<{ rps: number; mean: number; p50: number; p99: number; non2xx: number; errors: number }> {
  if (seconds.warmUp > 0) await autocannonRun(load, seconds.warmUp);
  const result = await autocannonRun(load, seconds.measure);
  return {
    rps: Math.round(result.requests.average),
    mean: result.latency.mean,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

function autocannonRun(load: Load, seconds: number): Promise<autocannon.Result> {
  return autocannon({
    url: load.url,
    connections: 10,
    duration: seconds,
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          ...(load.paths === undefined ? {} : { path: load.paths() }),
          headers: {
            ...request.headers,
            ...(load.key === undefined ? {} : { authorization: `Bearer ${load.key()}` }),
          },
        }),
      },
    ],
  });
}

/** API figures against a bare Fastify baseline, on the model left by benchIngest. */
export async function benchApi(ctx: Context, seconds: ApiSeconds, newEvents: number): Promise<Figure[]> {
  const baseline = await startBenchServer('baseline-server.ts');
  const ceiling = await startBenchServer('app-ceiling-server.ts');
  const dataDir = join(ctx.dir, 'data');
  let service = await startServiceProcess(ctx.brokers, ctx.topics, dataDir);
  const total = await topicEndOffsets(endOffsetsVia(kafkaOf(ctx.brokers)), Object.values(ctx.topics));
  await waitFor(() => appliedMessages(dataDir) >= total, 30 * 60_000);

  const keyed = keyedOrganizations(ctx.data);
  const randomKey = (): string => benchKeyOf(keyed[Math.floor(Math.random() * keyed.length)]!);
  const smallOrg = keyed.at(-1)!;
  const api = (port: number): string => `http://127.0.0.1:${port}${API_PREFIX}`;
  const figures: Figure[] = [];
  const a = await cannon({ name: 'a', url: `http://127.0.0.1:${baseline.port}/constant` }, seconds);
  const row = (name: string, r: typeof a, target?: string): void => {
    figures.push({
      name: `api ${name}`,
      value: `${r.rps} req/s, mean ${r.mean.toFixed(2)} ms, p50 ${r.p50} ms, p99 ${r.p99} ms${r.non2xx + r.errors > 0 ? `, ${r.non2xx} non-2xx, ${r.errors} errors` : ''}`,
      baseline: `${a.rps} req/s`,
      ratio: r.rps / a.rps,
      ...(target === undefined ? {} : { target }),
    });
  };
  figures.push({
    name: 'api (a) bare Fastify constant JSON',
    value: `${a.rps} req/s, mean ${a.mean.toFixed(2)} ms, p50 ${a.p50} ms, p99 ${a.p99} ms`,
  });
  const ceilingB = await cannon(
    { name: 'a2', url: `${api(ceiling.port)}/orders?limit=50`, key: randomKey },
    seconds,
  );
  row('(a2) this service, reads answered by constants: /orders?limit=50', ceilingB, 'ceiling of (b)');
  const ceilingE = await cannon(
    { name: 'a2', url: `${api(ceiling.port)}/orders/1/articles`, key: () => benchKeyOf(1) },
    seconds,
  );
  row('(a2) this service, reads answered by constants: /orders/{id}/articles', ceilingE, 'ceiling of (e)');
  ceiling.child.kill('SIGTERM');
  const b = await cannon(
    { name: 'b', url: `${api(service.httpPort)}/orders?limit=50`, key: randomKey },
    seconds,
  );
  row('(b) /orders?limit=50, random organizations', b, '≥ 0.5 × (a), p99 ≤ 10 ms');
  const c = await cannon(
    { name: 'c', url: `${api(service.httpPort)}/orders?limit=50&offset=100000`, key: () => benchKeyOf(1) },
    seconds,
  );
  row('(c) /orders?limit=50&offset=100000, large organization', c, 'p50 ≤ 20 ms');
  const dLarge = await cannon(
    { name: 'd', url: `${api(service.httpPort)}/orders?status=finished`, key: () => benchKeyOf(1) },
    seconds,
  );
  row('(d) /orders?status=finished, large organization', dLarge, 'p50 ≤ 1.5 × small-organization p50');
  const dSmall = await cannon(
    { name: 'd', url: `${api(service.httpPort)}/orders?status=finished`, key: () => benchKeyOf(smallOrg) },
    seconds,
  );
  row(`(d) /orders?status=finished, small organization (${smallOrg})`, dSmall);
  // autocannon's percentiles are whole milliseconds; the mean tells sub-millisecond latencies apart.
  figures.push({
    name: 'api (d) mean latency, large organization / small organization',
    value: `${dLarge.mean.toFixed(3)} ms / ${dSmall.mean.toFixed(3)} ms`,
    ratio: dLarge.mean / dSmall.mean,
    target: '≤ 1.5',
  });
  const largest = ctx.data.largeOrganizationOrders;
  const randomOrder = (): string =>
    `${API_PREFIX}/orders/${1 + Math.floor(Math.random() * Math.max(1, largest))}/articles`;
  const modelFile = new ModelFiles(dataDir).currentFile();
  if (modelFile === null) throw new Error(`the service left no model file in ${dataDir}`);
  /** A ceiling of (e) that reads the model file (`read`: see app-ceiling-server.ts); its req/s. */
  const fileCeiling = async (name: string, read: 'order' | 'articles', label: string): Promise<number> => {
    const server = await startBenchServer('app-ceiling-server.ts', modelFile, read);
    const ceiling = await cannon(
      { name, url: `${api(server.port)}/orders/1/articles`, paths: randomOrder, key: () => benchKeyOf(1) },
      seconds,
    );
    server.child.kill('SIGTERM');
    row(
      `(${name}) this service, constant answers after reading ${label} in the model file: /orders/{id}/articles, as (e)`,
      ceiling,
      `ceiling of (e) when reading ${read === 'order' ? 'the order' : 'its rows'} from the file`,
    );
    return ceiling.rps;
  };
  const orderRead = await fileCeiling('a3', 'order', 'one point lookup of the order');
  const answerRead = await fileCeiling(
    'a4',
    'articles',
    "the answer's rows (the service's statement, rows not turned into the answer)",
  );
  const e = await cannon(
    {
      name: 'e',
      url: `${api(service.httpPort)}/orders/1/articles`,
      paths: randomOrder,
      key: () => benchKeyOf(1),
    },
    seconds,
  );
  row('(e) /orders/{id}/articles, large organization', e, '≥ 0.7 × (a)');
  // A layout that found the order and its articles at the cost of one point lookup (a3) would still
  // build and send the answer: what (e) spends beyond reading its rows (a4).
  const bestLayout = 1 / (1 / orderRead + 1 / e.rps - 1 / answerRead);
  figures.push({
    name: 'api (e) bound for any layout of the model file: (a3) plus what (e) spends beyond (a4), per request',
    value: `${Math.round(bestLayout)} req/s`,
    baseline: `${a.rps} req/s`,
    ratio: bestLayout / a.rps,
    target: 'the most (e) can reach reading the file',
  });

  // (f): (b) while the service catches up on new events.
  await service.stop();
  const kafka = kafkaOf(ctx.brokers);
  const newOrders = Math.max(1, Math.round(newEvents / 7.75));
  const produced = await publishBenchData(
    kafka,
    ctx.topics,
    { ...ctx.data, orders: newOrders, largeOrganizationOrders: 0 },
    ctx.data.orders + 1,
  );
  const target = await topicEndOffsets(endOffsetsVia(kafka), Object.values(ctx.topics));
  service = await startServiceProcess(ctx.brokers, ctx.topics, dataDir);
  const before = appliedMessages(dataDir);
  const f = await cannon(
    { name: 'f', url: `${api(service.httpPort)}/orders?limit=50`, key: randomKey },
    seconds,
  );
  const during = appliedMessages(dataDir) - before;
  figures.push({
    name: 'api (f) = (b) while ingesting new events',
    value: `${f.rps} req/s, mean ${f.mean.toFixed(2)} ms, p50 ${f.p50} ms, p99 ${f.p99} ms; ${during} of ${produced.messages} new events applied during the run`,
    baseline: `${b.rps} req/s idle (b)`,
    ratio: f.rps / b.rps,
    target: '≥ 0.7 × idle',
  });
  await waitFor(() => appliedMessages(dataDir) >= target, 30 * 60_000);
  figures.push({
    name: 'service peak RSS (model + API + ingest)',
    value: `${service.peakRssMb()} MB`,
    target: '≤ 300 MB',
  });
  await service.stop();
  baseline.child.kill('SIGTERM');
  return figures;
}

/** A bench-only HTTP server from bench/ on a free loopback port, once it listens. */
async function startBenchServer(
  script: string,
  ...args: string[]
): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'bench', script), String(port), ...args],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return { child, port };
}

export function printFigures(figures: Figure[]): string {
  const lines = [
    '| figure | value | baseline (same run) | ratio | target |',
    '|---|---|---|---|---|',
    ...figures.map(
      (f) =>
        `| ${f.name} | ${f.value} | ${f.baseline ?? ''} | ${f.ratio === undefined ? '' : f.ratio.toFixed(3)} | ${f.target ?? ''} |`,
    ),
  ];
  return lines.join('\n');
}

export async function runBench(
  which: 'ingest' | 'rebuild' | 'api' | 'all',
  data: BenchData,
  apiSeconds: ApiSeconds,
  newEvents: number,
): Promise<Figure[]> {
  const { ctx, close, figures } = await setUp(data);
  try {
    if (which === 'ingest' || which === 'all' || which === 'api') {
      const ingest = await benchIngest(ctx);
      if (which !== 'api') figures.push(...ingest);
    }
    if (which === 'rebuild' || which === 'all') figures.push(...(await benchRebuild(ctx)));
    if (which === 'api' || which === 'all') figures.push(...(await benchApi(ctx, apiSeconds, newEvents)));
  } finally {
    await close();
  }
  return figures;
}

const isMain =
  process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '');
if (isMain) {
  const which = (process.argv[2] ?? 'all') as 'ingest' | 'rebuild' | 'api' | 'all';
  if (!['ingest', 'rebuild', 'api', 'all'].includes(which)) {
    console.error('usage: tsx bench/run.ts ingest|rebuild|api|all');
    process.exit(2);
  }
  const orders = Number(process.env['BENCH_ORDERS'] ?? defaultData.orders);
  const data: BenchData = {
    ...defaultData,
    orders,
    largeOrganizationOrders: Math.round(orders / 5),
    organizations: Math.min(defaultData.organizations, Math.max(10, Math.round(orders / 100))),
  };
  const started = new Date();
  runBench(
    which,
    data,
    {
      measure: Number(process.env['BENCH_API_SECONDS'] ?? 10),
      warmUp: Number(process.env['BENCH_API_WARMUP_SECONDS'] ?? 3),
    },
    Number(process.env['BENCH_NEW_EVENTS'] ?? 1_000_000),
  )
    .then((figures) => {
      console.log(`\n${which} benchmark, ${started.toISOString()}, Node ${process.version}\n`);
      console.log(printFigures(figures));
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}

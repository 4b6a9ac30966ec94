/**
 * Request latency during a projection-version candidate, against the same service idle, in one run.
 * Each round measures a closed-loop load (two requests in flight, GET /orders?limit=50 of random
 * organizations) on the caught-up service; then, twice, it marks the model as of an older
 * projection version, starts the service again and measures the same load from the start until the
 * rebuilt model is served: once as configured by default (the rebuild gives way to requests), once
 * with CANDIDATE_WORK_SHARE=1 (it never does). A last rebuild runs with no load, for what giving way
 * costs in rebuild time.
 *   npm run bench:version-candidate   (BENCH_ORDERS, default 100 000; BENCH_ROUNDS, default 3;
 *   BENCH_IDLE_SECONDS, default 10)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_PREFIX } from '../schemas/api.js';
import type { TopicRole } from '../schemas/streams.js';
import { ModelFiles } from '../src/read-model/files.js';
import { runLoad, type LoadReport } from '../tools/load.js';
import { memoryPeaks } from './peers/proc.js';
import { markPreviousProjectionVersion } from '../tools/model-progress.js';
import {
  benchBroker,
  benchDataOf,
  benchKeyOf,
  createBenchTopics,
  kafkaOf,
  keyedOrganizations,
  publishBenchData,
  startServiceProcess,
  useBuiltService,
  waitUntil,
  warmPageCache,
  type BenchData,
  type ServiceProcess,
} from './lib.js';
import { note } from './progress.js';

const orders = Number(process.env['BENCH_ORDERS'] ?? 100_000);
const rounds = Math.max(1, Number(process.env['BENCH_ROUNDS'] ?? 3));
const idleSeconds = Number(process.env['BENCH_IDLE_SECONDS'] ?? 10);
const data: BenchData = benchDataOf(orders);
const log = (line: string): void => note(`version candidate: ${line}`);

interface Health {
  ready: boolean;
  state: string;
  file: string;
}

async function healthOf(service: ServiceProcess): Promise<Health> {
  const answer = await fetch(`http://127.0.0.1:${service.adminPort}/readyz`);
  return (await answer.json()) as Health;
}

/** Marks the served model as built by projection version 1, as a model of an older release is. */
function markOlderVersion(dataDir: string): string {
  const file = new ModelFiles(dataDir).currentFile();
  if (file === null) throw new Error(`no served model in ${dataDir}`);
  markPreviousProjectionVersion(file);
  return file;
}

function load(service: ServiceProcess, durationMs: number, until?: Promise<unknown>): Promise<LoadReport> {
  const keyed = keyedOrganizations(data);
  return runLoad({
    durationMs,
    concurrency: 2,
    ...(until === undefined ? {} : { until }),
    next: () => {
      const org = keyed[Math.floor(Math.random() * keyed.length)]!;
      const offset = Math.floor(Math.random() * 20) * 50;
      return {
        url: `http://127.0.0.1:${service.httpPort}${API_PREFIX}/orders?limit=50&offset=${offset}`,
        headers: { authorization: `Bearer ${benchKeyOf(org)}` },
      };
    },
  });
}

/** Starts the service on a model of an older version; resolves when the rebuilt model is served. */
async function rebuild(
  brokers: string,
  topics: Record<TopicRole, string>,
  dataDir: string,
  oldFile: string,
  env: Record<string, string> = {},
): Promise<{
  service: ServiceProcess;
  switched: Promise<number>;
  /** the service's peak memory, MB, sampled from its start until the rebuilt model is served */
  memory: Promise<{ rss: number; anon: number; pss: number }>;
}> {
  const started = Date.now();
  const service = await startServiceProcess(brokers, topics, dataDir, env);
  const sampler = memoryPeaks(() => [service.child.pid ?? 0]);
  const state = (await healthOf(service)).state;
  if (state !== 'catching_up_candidate')
    throw new Error(`expected the service to be catching up a candidate, it is ${state}`);
  const switched = waitUntil(
    'the rebuilt model is served',
    async () => (await healthOf(service)).file !== oldFile,
    30 * 60_000,
    20,
  ).then(() => Date.now() - started);
  const memory = switched.then(
    () => sampler.peaks(),
    () => sampler.peaks(),
  );
  void memory.finally(() => sampler.stop());
  return { service, switched, memory };
}

const ms = (value: number): string => `${value.toFixed(2)} ms`;

async function main(): Promise<void> {
  useBuiltService();
  const broker = await benchBroker();
  const dir = mkdtempSync(join(tmpdir(), 'bench-version-candidate-'));
  const dataDir = join(dir, 'data');
  let service: ServiceProcess | undefined;
  try {
    const kafka = kafkaOf(broker.brokers);
    const topics = await createBenchTopics(kafka, `bench-version-${Date.now()}`);
    log(`publishing ${orders} orders`);
    const produced = await publishBenchData(kafka, topics, data);
    log(`published ${produced.messages} messages`);
    const first = await startServiceProcess(broker.brokers, topics, dataDir);
    service = first;
    await waitUntil('caught up', async () => (await healthOf(first)).ready, 30 * 60_000, 200);

    const rows: string[] = [];
    const ratios: Record<'default' | 'never', number[]> = { default: [], never: [] };
    const anonPeaks: number[] = [];
    const modes = [
      { name: 'default' as const, label: 'gives way (default)', env: {} },
      { name: 'never' as const, label: 'CANDIDATE_WORK_SHARE=1', env: { CANDIDATE_WORK_SHARE: '1' } },
    ];
    for (let round = 1; round <= rounds; round += 1) {
      const current = service;
      warmPageCache((await healthOf(current)).file);
      const idle = await load(current, idleSeconds * 1000);
      log(`round ${round}: idle p50 ${ms(idle.p50Ms)}, p99 ${ms(idle.p99Ms)} (${idle.requests} requests)`);
      for (const mode of modes) {
        await service.stop();
        const oldFile = markOlderVersion(dataDir);
        const started = await rebuild(broker.brokers, topics, dataDir, oldFile, mode.env);
        service = started.service;
        const during = await load(started.service, 30 * 60_000, started.switched);
        const tookMs = await started.switched;
        const memory = await started.memory;
        anonPeaks.push(memory.anon);
        const statuses = JSON.stringify(during.statuses);
        if (Object.keys(during.statuses).join() !== '200') {
          throw new Error(`answers during the rebuild: ${statuses}`);
        }
        const ratio = during.p99Ms / idle.p99Ms;
        ratios[mode.name].push(ratio);
        log(
          `round ${round}, ${mode.label}: during the rebuild (${(tookMs / 1000).toFixed(1)} s) p50 ${ms(during.p50Ms)}, p99 ${ms(during.p99Ms)}, ratio ${ratio.toFixed(2)}; peak anonymous RSS ${memory.anon} MB (RSS ${memory.rss}, PSS ${memory.pss})`,
        );
        rows.push(
          `| ${round} | ${mode.label} | ${ms(idle.p50Ms)} / ${ms(idle.p99Ms)} | ${ms(during.p50Ms)} / ${ms(during.p99Ms)} | **${ratio.toFixed(2)}** | ${(tookMs / 1000).toFixed(1)} s | ${during.requests} | ${memory.anon} / ${memory.rss} |`,
        );
        const rebuilt = started.service;
        await waitUntil(
          'ready on the rebuilt model',
          async () => (await healthOf(rebuilt)).ready,
          30 * 60_000,
          200,
        );
      }
    }

    // The same rebuild with no requests: the time giving way costs.
    await service.stop();
    const oldFile = markOlderVersion(dataDir);
    const quiet = await rebuild(broker.brokers, topics, dataDir, oldFile);
    service = quiet.service;
    const quietMs = await quiet.switched;
    const quietMemory = await quiet.memory;
    anonPeaks.push(quietMemory.anon);
    log(
      `a rebuild with no requests: ${(quietMs / 1000).toFixed(1)} s; peak anonymous RSS ${quietMemory.anon} MB (RSS ${quietMemory.rss})`,
    );

    console.log(
      [
        `version candidate under requests, ${new Date().toISOString()}, Node ${process.version}, ${produced.messages} messages (${orders} orders)`,
        '',
        '| round | rebuild | idle p50 / p99 | during the rebuild p50 / p99 | p99 ratio | rebuild until served | requests during | peak anonymous / RSS, MB |',
        '| --- | --- | --- | --- | --- | --- | --- | --- |',
        ...rows,
        '',
        `worst p99 ratio: ${Math.max(...ratios.default).toFixed(2)} giving way (goal ≤ 2), ${Math.max(...ratios.never).toFixed(2)} with CANDIDATE_WORK_SHARE=1; the rebuild with no requests took ${(quietMs / 1000).toFixed(1)} s; the service's peak anonymous RSS while a candidate caught up: ${Math.max(...anonPeaks)} MB (goal ≤ 300)`,
      ].join('\n'),
    );
  } finally {
    await service?.stop();
    rmSync(dir, { recursive: true, force: true });
    await broker.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

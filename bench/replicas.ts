/**
 * What the features beyond the specification save, measured on one data set:
 *  - a new replica from a snapshot (`snapshot --to` on a running replica, `snapshot --restore` on the
 *    new one) against a replica that replays every topic: time from start to ready;
 *  - a poll answered 304 (If-None-Match with the current tag) against the bare Fastify baseline of
 *    the same run, and against the same poll without a tag.
 *   npm run bench:replicas   (BENCH_ORDERS, default 1 000 000; BENCH_API_SECONDS, default 10;
 *   BENCH_POLL_ROUNDS, default 3: the polling loads take turns this many times)
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runServiceCommand } from '../tools/harness.js';
import { appliedMessages } from '../tools/model-progress.js';
import { loopbackServiceEnv } from '../tools/service-env.js';
import { API_PREFIX } from '../schemas/api.js';
import { ModelFiles } from '../src/read-model/files.js';
import type { TopicRole } from '../schemas/streams.js';
import {
  benchBroker,
  benchDataOf,
  benchKeyOf,
  createBenchTopics,
  defaultData,
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
import { cannon, startBenchServer } from './run.js';

const orders = Number(process.env['BENCH_ORDERS'] ?? defaultData.orders);
const seconds = Number(process.env['BENCH_API_SECONDS'] ?? 10);
/** rounds of the polling loads, taking turns */
const pollRounds = Math.max(1, Number(process.env['BENCH_POLL_ROUNDS'] ?? 3));
const data: BenchData = benchDataOf(orders);

const log = (line: string): void => note(`replicas: ${line}`);

/** Runs a CLI command of the service against `dataDir`; resolves with its stdout. */
function cli(
  brokers: string,
  topics: Record<TopicRole, string>,
  dataDir: string,
  args: string[],
): Promise<string> {
  const env = loopbackServiceEnv({
    brokers,
    groupId: `bench-cli-${Date.now()}`,
    topics,
    dataDir,
    logLevel: 'warn',
  });
  return runServiceCommand(args, env);
}

/** Starts the service on `dataDir` and resolves once /readyz answers 200: the time to ready. */
async function startUntilReady(
  brokers: string,
  topics: Record<TopicRole, string>,
  dataDir: string,
): Promise<{ service: ServiceProcess; ms: number }> {
  const started = Date.now();
  const service = await startServiceProcess(brokers, topics, dataDir);
  let lastLog = Date.now();
  await waitUntil(
    '/readyz answers 200',
    async () => {
      const ready = await fetch(`http://127.0.0.1:${service.adminPort}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (!ready && Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        log(`not ready yet after ${Math.round((Date.now() - started) / 1000)} s`);
      }
      return ready;
    },
    60 * 60_000,
    200,
  );
  return { service, ms: Date.now() - started };
}

async function main(): Promise<void> {
  useBuiltService();
  const broker = await benchBroker();
  const dir = mkdtempSync(join(tmpdir(), 'bench-replicas-'));
  const services: ServiceProcess[] = [];
  try {
    const kafka = kafkaOf(broker.brokers);
    const topics = await createBenchTopics(kafka, `bench-replicas-${Date.now()}`);
    log(`publishing ${orders} orders`);
    const produced = await publishBenchData(kafka, topics, data);
    log(`published ${produced.messages} messages in ${(produced.ms / 1000).toFixed(1)} s`);

    log('replica 1: replays every topic from the start');
    const replay = await startUntilReady(broker.brokers, topics, join(dir, 'replica-1'));
    services.push(replay.service);
    log(`replica 1 ready after ${(replay.ms / 1000).toFixed(1)} s`);

    const snapshotFile = join(dir, 'snapshot.sqlite');
    let t = Date.now();
    await cli(broker.brokers, topics, join(dir, 'replica-1'), ['snapshot', '--to', snapshotFile]);
    const snapshotMs = Date.now() - t;
    const snapshotMb = Math.round(statSync(snapshotFile).size / 1024 / 1024);
    log(`snapshot of ${snapshotMb} MB taken in ${(snapshotMs / 1000).toFixed(1)} s while replica 1 serves`);
    t = Date.now();
    await cli(broker.brokers, topics, join(dir, 'replica-2'), ['snapshot', '--restore', snapshotFile]);
    const restoreMs = Date.now() - t;
    const restored = await startUntilReady(broker.brokers, topics, join(dir, 'replica-2'));
    services.push(restored.service);
    log(
      `replica 2 ready ${(restored.ms / 1000).toFixed(1)} s after its start (restore took ${(restoreMs / 1000).toFixed(1)} s)`,
    );
    await restored.service.stop();

    // Polling, once replica 1 has applied everything (ready means lag under the threshold): the bare
    // Fastify baseline, the poll without a tag, the poll with the current tag.
    await waitUntil(
      'replica 1 has applied every message',
      () => appliedMessages(join(dir, 'replica-1')) >= produced.messages,
      10 * 60_000,
      500,
    );
    const apiSeconds = { measure: seconds, warmUp: Math.min(3, seconds) };
    const servedFile = new ModelFiles(join(dir, 'replica-1')).currentFile();
    if (servedFile !== null) warmPageCache(servedFile);
    const baseline = await startBenchServer('baseline-server.ts');
    const api = `http://127.0.0.1:${replay.service.httpPort}${API_PREFIX}`;
    const keyed = keyedOrganizations(data);
    const tags = new Map<number, string>();
    for (const org of keyed) {
      const answer = await fetch(`${api}/orders?limit=50`, {
        headers: { authorization: `Bearer ${benchKeyOf(org)}` },
      });
      await answer.arrayBuffer();
      tags.set(org, answer.headers.get('etag') ?? '');
    }
    const randomOrg = (): number => keyed[Math.floor(Math.random() * keyed.length)]!;
    // The three loads take turns, round after round: a drift of the machine's speed during the run
    // then weighs on each of them alike, where one figure after the other would load it on one.
    const rounds: Record<'bare' | 'plain' | 'conditional', Awaited<ReturnType<typeof cannon>>>[] = [];
    for (let round = 0; round < pollRounds; round += 1) {
      rounds.push({
        bare: await cannon({ name: 'bare', url: `http://127.0.0.1:${baseline.port}/constant` }, apiSeconds),
        plain: await cannon(
          { name: 'no tag', url: `${api}/orders?limit=50`, key: () => benchKeyOf(randomOrg()) },
          apiSeconds,
        ),
        conditional: await cannon(
          {
            name: '304',
            url: `${api}/orders?limit=50`,
            headers: () => {
              const org = randomOrg();
              return { authorization: `Bearer ${benchKeyOf(org)}`, 'if-none-match': tags.get(org)! };
            },
          },
          apiSeconds,
        ),
      });
    }
    baseline.child.kill('SIGTERM');
    /** requests per second over every round, and the load's statuses over every round */
    const overall = (load: 'bare' | 'plain' | 'conditional') => {
      const statuses: Record<string, number> = {};
      for (const round of rounds) {
        for (const [code, count] of Object.entries(round[load].statuses))
          statuses[code] = (statuses[code] ?? 0) + count;
      }
      return {
        rps: Math.round(rounds.reduce((sum, round) => sum + round[load].rps, 0) / rounds.length),
        p99: Math.max(...rounds.map((round) => round[load].p99)),
        statuses,
      };
    };
    const bare = overall('bare');
    const plain = overall('plain');
    const conditional = overall('conditional');
    const perRound = rounds
      .map(
        (round) =>
          `${(round.conditional.rps / round.bare.rps).toFixed(3)} (${round.conditional.rps} / ${round.bare.rps})`,
      )
      .join(', ');

    const lines = [
      `replicas and polling, ${new Date().toISOString()}, Node ${process.version}, ${produced.messages} messages (${orders} orders)`,
      '',
      '| figure | value | baseline (same run) | ratio |',
      '|---|---|---|---|',
      `| new replica, full replay: start to ready | ${(replay.ms / 1000).toFixed(1)} s | | |`,
      `| snapshot --to on the serving replica | ${(snapshotMs / 1000).toFixed(1)} s, ${snapshotMb} MB | | |`,
      `| new replica from the snapshot: restore + start to ready | ${((restoreMs + restored.ms) / 1000).toFixed(1)} s (restore ${(restoreMs / 1000).toFixed(1)} s) | ${(replay.ms / 1000).toFixed(1)} s full replay | ${((restoreMs + restored.ms) / replay.ms).toFixed(3)} |`,
      `| bare Fastify, constant JSON (mean of ${pollRounds} rounds) | ${bare.rps} req/s, p99 ${bare.p99} ms | | |`,
      `| GET /orders?limit=50, random organizations, no tag | ${plain.rps} req/s, p99 ${plain.p99} ms, ${JSON.stringify(plain.statuses)} | ${bare.rps} req/s bare | ${(plain.rps / bare.rps).toFixed(3)} |`,
      `| the same with If-None-Match of the current tag (304) | ${conditional.rps} req/s, p99 ${conditional.p99} ms, ${JSON.stringify(conditional.statuses)} | ${bare.rps} req/s bare | ${(conditional.rps / bare.rps).toFixed(3)} (goal ≥ 0.7) |`,
      '',
      `${pollRounds} rounds of ${apiSeconds.measure} s per load, taking turns (bare, no tag, 304); figures are the means over the rounds, p99 the highest; 304 ÷ bare per round: ${perRound}`,
    ];
    console.log(lines.join('\n'));
  } finally {
    for (const service of services) await service.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    await broker.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

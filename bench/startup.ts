/**
 * Start-up time and idle memory of the service executable: from spawn to `/readyz` 200 on an empty
 * model (every declared stream's topic, empty), then the resident set size after 5 s idle.
 *
 *   KAFKA_BROKERS=host:port tsx bench/startup.ts [--cwd DIR] NODE_BINARY ARGS…
 *
 * e.g. `… $(which node) dist/src/main.js serve` (built JavaScript) or `… -- node --import tsx src/main.ts serve`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { createTopicsWithLeaders } from '../src/kafka/kafkajs-topics.js';
import { freePort } from '../tools/local-kafka.js';
import { contractTopicNames } from '../tools/harness.js';
import { loopbackServiceEnv } from '../tools/service-env.js';

const { values, positionals } = parseArgs({
  options: { cwd: { type: 'string' }, runs: { type: 'string' } },
  allowPositionals: true,
});
const brokers = process.env['KAFKA_BROKERS'];
if (brokers === undefined || positionals.length < 2) {
  console.error(
    'usage: KAFKA_BROKERS=host:port tsx bench/startup.ts [--cwd DIR] [--runs N] NODE_BINARY ARGS…',
  );
  process.exit(2);
}
const [node, ...args] = positionals as [string, ...string[]];
const cwd = resolve(values.cwd ?? '.');
const runs = Number(values.runs ?? 3);

const kafka = new Kafka({
  clientId: 'startup-bench',
  brokers: brokers.split(','),
  logLevel: logLevel.NOTHING,
});
const admin = kafka.admin();
await admin.connect();
const stamp = Date.now();
const topics = contractTopicNames(`startup-${stamp}`);
await createTopicsWithLeaders(
  admin,
  Object.values(topics).map((topic) => ({ topic, numPartitions: 3 })),
);
await admin.disconnect();

const results: { readyMs: number; idleRssMb: number }[] = [];
for (let run = 0; run < runs; run += 1) {
  const dataDir = mkdtempSync(join(tmpdir(), 'startup-'));
  const adminPort = await freePort();
  const started = performance.now();
  const child = spawn(node, args, {
    cwd,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...loopbackServiceEnv({
        brokers,
        groupId: `startup-${stamp}-${run}`,
        topics,
        dataDir,
        httpPort: await freePort(),
        adminPort,
        logLevel: 'warn',
      }),
      LAG_CHECK_INTERVAL_MS: '100',
    },
  });
  let readyMs = NaN;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status === 200) {
        readyMs = performance.now() - started;
        break;
      }
    } catch {
      // not listening yet
    }
    if (performance.now() - started > 60_000) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 5000));
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]);
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
  results.push({ readyMs: Math.round(readyMs), idleRssMb: Math.round(rssKb / 1024) });
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  JSON.stringify({
    command: [node, ...args].join(' '),
    node: await new Promise<string>((r) => {
      const v = spawn(node, ['--version']);
      let o = '';
      v.stdout.on('data', (c: Buffer) => (o += c.toString()));
      v.on('exit', () => r(o.trim()));
    }),
    runs: results,
    medianReadyMs: median(results.map((r) => r.readyMs)),
    medianIdleRssMb: median(results.map((r) => r.idleRssMb)),
  }),
);

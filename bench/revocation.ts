/**
 * How long a revocation takes to count, from outside: the time from the broker's acknowledgement
 * of `api_key.revoked` (acks=-1) until the key is refused (401), polled every 2 ms through the API.
 * Measured idle, then during a burst of `--orders` orders (with their statuses and articles)
 * published at the same time. `npm run bench:revocation -- [--orders N] [--revocations N]`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Partitioners } from 'kafkajs';
import { sha256Hex } from '../src/http/bearer-key.js';
import { numericOptions, reportRun } from './cli.js';
import {
  benchBroker,
  benchDataOf,
  createBenchTopics,
  kafkaOf,
  publishBenchData,
  startServiceProcess,
  useBuiltService,
  waitUntil,
} from './lib.js';

const options = numericOptions(
  { orders: 200_000, revocations: 10 },
  'usage: npm run bench:revocation -- [--orders N] [--revocations N]',
);
const keyOf = (n: number): string => `revocation-bench-key-${n}`;
const loadAverage = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const started = new Date();
  useBuiltService();
  const broker = await benchBroker();
  const kafka = kafkaOf(broker.brokers);
  const topics = await createBenchTopics(kafka, `revocation-${Date.now()}`);
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  const keys = 2 * options.revocations;
  await producer.send({
    topic: topics.apiKeys,
    acks: -1,
    messages: Array.from({ length: keys }, (_, i) => ({
      key: `rk-${i + 1}`,
      value: JSON.stringify({
        event_id: `rk-issued-${i + 1}`,
        type: 'api_key.issued',
        occurred_at: '2026-01-01T00:00:00Z',
        data: { key_id: `rk-${i + 1}`, organization_id: i + 1, key_sha256: sha256Hex(keyOf(i + 1)) },
      }),
    })),
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-revocation-'));
  const service = await startServiceProcess(broker.brokers, topics, dataDir);
  const status = async (n: number): Promise<number> =>
    (
      await fetch(`http://127.0.0.1:${service.httpPort}/api/external-api/v1/orders?limit=1`, {
        headers: { authorization: `Bearer ${keyOf(n)}` },
      })
    ).status;
  const loads: number[] = [];
  try {
    await waitUntil('every key is accepted', async () => (await status(keys)) === 200, 120_000, 50);
    /** Revokes key `n` and returns the milliseconds from the broker's acknowledgement to the first 401. */
    const revoke = async (n: number): Promise<number> => {
      await producer.send({
        topic: topics.apiKeys,
        acks: -1,
        messages: [
          {
            key: `rk-${n}`,
            value: JSON.stringify({
              event_id: `rk-revoked-${n}`,
              type: 'api_key.revoked',
              occurred_at: '2026-01-02T00:00:00Z',
              data: { key_id: `rk-${n}` },
            }),
          },
        ],
      });
      const acknowledged = performance.now();
      while ((await status(n)) !== 401) {
        if (performance.now() - acknowledged > 60_000) throw new Error(`key ${n} still accepted after 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      loads.push(loadAverage());
      return performance.now() - acknowledged;
    };
    const idle: number[] = [];
    for (let n = 1; n <= options.revocations; n += 1) {
      idle.push(await revoke(n));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    let burstDone = false;
    const burst = publishBenchData(kafka, topics, benchDataOf(options.orders), 10_000_001).finally(
      () => (burstDone = true),
    );
    const duringBurst: number[] = [];
    await new Promise((resolve) => setTimeout(resolve, 1000));
    for (let n = options.revocations + 1; n <= keys; n += 1) {
      duringBurst.push(await revoke(n));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const stillPublishing = !burstDone;
    await burst;
    const summary = (label: string, values: number[]): { name: string; value: string }[] => {
      const sorted = [...values].sort((a, b) => a - b);
      return [
        { name: `${label}: p50 ms`, value: percentile(sorted, 50).toFixed(0) },
        { name: `${label}: max ms`, value: (sorted.at(-1) ?? Number.NaN).toFixed(0) },
      ];
    };
    reportRun(
      'revocation',
      started,
      options,
      [...summary('idle', idle), ...summary(`during a burst of ${options.orders} orders`, duringBurst)],
      {
        idleMs: idle.map(Math.round),
        duringBurstMs: duringBurst.map(Math.round),
        burstStillPublishingAtLastRevocation: stillPublishing,
        loadAverageAtEachRevocation: loads,
      },
    );
  } finally {
    await service.stop();
    await producer.disconnect();
    await broker.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();

/**
 * Hostile batches from outside (issue "Hostile batches"): the built service (`npm start`) against a
 * broker of its own, fed zstd batches of a few KB that inflate to 100 MB, 700 MB and 1 GB (sent by
 * kafkajs with the zstd codec: kcat reads lines that long too slowly; kafkajs's encoder stops short of 1.5 GB), and one kcat batch of 200 000
 * small records. After them, ordinary events on other partitions and a revocation: how long
 * until they answer, the service's peak RSS (VmHWM), and what the operator sees.
 *
 *   npm run bench:hostile
 */
import { spawnSync } from 'node:child_process';
import { kcatProduce } from '../tools/kcat.js';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import type { DomainEvent } from '../schemas/events.js';
import { messageKeyOf, topicRoleOf } from '../src/consumer/publish.js';
import { sha256Hex } from '../src/http/auth.js';
// registers the zstd codec with kafkajs
import '../src/kafka/kafkajs-adapter.js';
import {
  createContractTopicSet,
  projectRoot,
  spawnServiceCommand,
  useServiceRuntime,
  waitUntil,
} from '../tools/harness.js';
import { freePort, startLocalBroker, stopLocalBroker } from '../tools/local-kafka.js';
import { loopbackServiceEnv } from '../tools/service-env.js';

const MB = 1024 * 1024;
const at = (s: number): string => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
const order = (id: number, org = 1): DomainEvent => ({
  event_id: `h-${id}`,
  type: 'order.created',
  occurred_at: at(id),
  data: {
    order_id: id,
    organization_id: org,
    member_id: 1,
    press_release_title: `Order ${id}`,
    status: 'publishing',
    distribution_date: null,
    created_at: at(id),
  },
});
const key = (org: number): DomainEvent => ({
  event_id: `k-${org}`,
  type: 'api_key.issued',
  occurred_at: at(0),
  data: { key_id: `key-${org}`, organization_id: org, key_sha256: sha256Hex(`raw-key-${org}`) },
});

function vmHwmMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

async function main(): Promise<void> {
  spawnSync('npm', ['run', 'build'], { cwd: projectRoot, stdio: 'inherit' });
  useServiceRuntime('dist');
  const dir = mkdtempSync(join(tmpdir(), 'hostile-'));
  const broker = await startLocalBroker();
  const kafka = new Kafka({
    clientId: 'hostile-bench',
    brokers: [broker.brokers],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  const producer = kafka.producer();
  let service: ReturnType<typeof spawnServiceCommand> | null = null;
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    const topics = await createContractTopicSet(admin, 'hostile');
    const send = async (events: DomainEvent[]): Promise<void> => {
      for (const event of events) {
        await producer.send({
          topic: topics[topicRoleOf(event)],
          messages: [{ key: messageKeyOf(event), value: JSON.stringify(event) }],
        });
      }
    };
    await send([key(1), key(2), order(1)]);
    const httpPort = await freePort();
    const adminPort = await freePort();
    const env = {
      ...loopbackServiceEnv({
        brokers: broker.brokers,
        groupId: 'hostile',
        topics,
        dataDir: join(dir, 'data'),
        httpPort,
        adminPort,
      }),
      LOG_LEVEL: 'warn',
      ...(process.env['BATCH_MAX_INFLATED_BYTES'] === undefined
        ? {}
        : { BATCH_MAX_INFLATED_BYTES: process.env['BATCH_MAX_INFLATED_BYTES'] }),
    };
    service = spawnServiceCommand(['serve'], env);
    const logLines: string[] = [];
    service.stderr?.on('data', (c: Buffer) => logLines.push(...c.toString().split('\n').filter(Boolean)));
    service.stdout?.on('data', (c: Buffer) => logLines.push(...c.toString().split('\n').filter(Boolean)));
    const pid = service.pid ?? 0;
    const api = async (path: string, org: number): Promise<number> =>
      (
        await fetch(`http://127.0.0.1:${httpPort}/api/external-api/v1${path}`, {
          headers: { authorization: `Bearer raw-key-${org}` },
        }).catch(() => null)
      )?.status ?? 0;
    await waitUntil('the service answers', async () => (await api('/orders', 1)) === 200, 60_000);
    console.log(`service ready; peak RSS so far ${vmHwmMb(pid)} MB`);

    // The padded values are sent by kafkajs with the zstd codec (a producer independent of the
    // service's adapter): kcat reads a line of hundreds of MB too slowly to be of use here.
    const padded = async (name: string, topic: string, id: number, bytes: number): Promise<void> => {
      const json = Buffer.from(JSON.stringify(order(id)));
      const value = Buffer.concat([
        json.subarray(0, -1),
        Buffer.alloc(bytes - json.length, ' '),
        Buffer.from('}'),
      ]);
      const started = Date.now();
      await producer.send({
        topic,
        compression: CompressionTypes.ZSTD,
        messages: [{ key: String(id), value, partition: 0 }],
      });
      console.log(`${name}: published to ${topic}[0] in ${Date.now() - started} ms`);
    };
    await padded('zstd inflating to 100 MB', topics.orders, 100, 100 * MB);
    await padded('zstd inflating to 700 MB', topics.orderStatus, 101, 700 * MB);
    await padded('zstd inflating to 1 GB', topics.articles, 102, 1_000_000_000);
    {
      const file = join(dir, 'input.txt');
      const out = createWriteStream(file);
      for (let i = 0; i < 200_000; i += 1) out.write(`${i}\t{"n":${i}}\n`);
      out.end();
      await new Promise<void>((resolve) => out.on('finish', () => resolve()));
      const started = Date.now();
      kcatProduce({
        brokers: broker.brokers,
        topic: topics.orders,
        partition: 1,
        lines: { file },
        settings: [
          'batch.num.messages=200000',
          'queue.buffering.max.messages=1000000',
          'batch.size=100000000',
          'linger.ms=1000',
        ],
      });
      console.log(
        `200 000 small records in one zstd batch (kcat): published to ${topics.orders}[1] in ${Date.now() - started} ms`,
      );
    }

    // After them: an order on the orders topic's third partition (the others hold hostile batches)
    // and a revocation.
    const published = Date.now();
    await producer.send({
      topic: topics.orders,
      messages: [{ key: '1001', value: JSON.stringify(order(1001, 2)), partition: 2 }],
    });
    await send([
      { event_id: 'r-1', type: 'api_key.revoked', occurred_at: at(5000), data: { key_id: 'key-1' } },
    ]);
    await waitUntil(
      'the revocation is applied',
      async () => (await api('/orders', 1)) === 401,
      60_000,
      50,
    ).catch((error: unknown) => {
      console.log(`FAILED: ${String(error)}; the service's last lines:\n${logLines.slice(-8).join('\n')}`);
      throw error;
    });
    const revokedMs = Date.now() - published;
    await waitUntil(
      'the order after them is listed',
      async () => {
        const answer = await fetch(`http://127.0.0.1:${httpPort}/api/external-api/v1/orders`, {
          headers: { authorization: 'Bearer raw-key-2' },
        }).catch(() => null);
        return answer !== null && ((await answer.json()) as { total: number }).total === 1;
      },
      60_000,
      50,
    );
    console.log(
      `published after them: a revocation refused ${revokedMs} ms later, an order listed ${Date.now() - published} ms later`,
    );
    await new Promise((resolve) => setTimeout(resolve, 12_000));
    const readyz = await (await fetch(`http://127.0.0.1:${adminPort}/readyz`)).text();
    const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    console.log(`/readyz: ${readyz}`);
    console.log(
      metrics
        .split('\n')
        .filter((l) => l.startsWith('orders_read_model_unreadable_batches_total'))
        .join('\n'),
    );
    console.log(`first log line about it: ${logLines.find((l) => l.includes('cannot be read')) ?? '(none)'}`);
    console.log(`service up: ${service.exitCode === null}; peak RSS (VmHWM) ${vmHwmMb(pid)} MB`);
  } finally {
    service?.kill('SIGTERM');
    await Promise.all([admin.disconnect(), producer.disconnect()]).catch(() => undefined);
    await stopLocalBroker(broker);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

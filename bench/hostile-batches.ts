/**
 * Hostile batches from outside (issue "Hostile batches"): the built service (`npm start`) against a
 * broker of its own, fed zstd batches of a few KB that inflate to 100 MB, 700 MB and 1 GB (sent by
 * kafkajs with the zstd codec: kcat reads lines that long too slowly; kafkajs's encoder stops short of
 * 1.5 GB), one of four 1 GiB records (4 GiB, its records compressed as a stream and handed to
 * kafkajs as the batch's compressed records), and one kcat batch of 200 000
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
import { once } from 'node:events';
import { createZstdCompress } from 'node:zlib';
import kafkajs from 'kafkajs';
import type { DomainEvent } from '../schemas/events.js';
import { messageKeyOf, topicRoleOf } from '../src/kafka/publisher.js';
import { sha256Hex } from '../src/http/bearer-key.js';
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

const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajs;

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

/** Kafka's zigzag varint. */
function varint(n: number): Buffer {
  let v = BigInt(n) >= 0n ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
  const bytes: number[] = [];
  while (v >= 0x80n) {
    bytes.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  bytes.push(Number(v));
  return Buffer.from(bytes);
}

/**
 * One zstd frame of `count` Kafka records (format v2), each value an event padded with spaces to
 * `valueBytes`: streamed through the compressor, so a frame that inflates to gigabytes costs a few
 * MB of memory to make.
 */
async function zstdRecords(
  count: number,
  valueBytes: number,
  event: (i: number) => DomainEvent,
): Promise<Buffer> {
  const spaces = Buffer.alloc(16 * MB, ' ');
  const compress = createZstdCompress();
  const out: Buffer[] = [];
  compress.on('data', (chunk: Buffer) => out.push(chunk));
  const done = new Promise<void>((resolve, reject) => {
    compress.on('end', resolve);
    compress.on('error', reject);
  });
  const write = async (chunk: Buffer): Promise<void> => {
    if (!compress.write(chunk)) await once(compress, 'drain');
  };
  for (let i = 0; i < count; i += 1) {
    const json = Buffer.from(JSON.stringify(event(i)));
    const key = Buffer.from(String(i));
    const head = Buffer.concat([
      Buffer.from([0]), // attributes
      varint(0), // timestamp delta
      varint(i), // offset delta
      varint(key.length),
      key,
      varint(valueBytes),
    ]);
    const tail = varint(0); // no headers
    await write(Buffer.concat([varint(head.length + valueBytes + tail.length), head, json.subarray(0, -1)]));
    for (let left = valueBytes - json.length; left > 0; left -= spaces.length) {
      await write(left >= spaces.length ? spaces : spaces.subarray(0, left));
    }
    await write(Buffer.concat([Buffer.from('}'), tail]));
  }
  compress.end();
  await done;
  return Buffer.concat(out);
}

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
      // 4 GB is past what kafkajs encodes (and past one record's int32 length): four orders of 1 GiB
      // each, encoded as Kafka records and compressed as one zstd stream, never held whole in memory.
      const started = Date.now();
      const frame = await zstdRecords(4, 1024 * MB, (i) => order(200 + i));
      const codecs = CompressionCodecs as Record<number, () => unknown>;
      const zstd = codecs[CompressionTypes.ZSTD];
      // The batch header states four records; its records are the prepared frame.
      codecs[CompressionTypes.ZSTD] = () => ({ compress: () => Promise.resolve(frame) });
      try {
        await producer.send({
          topic: topics.articles,
          compression: CompressionTypes.ZSTD,
          messages: [0, 1, 2, 3].map((i) => ({ key: String(200 + i), value: '', partition: 1 })),
        });
      } finally {
        if (zstd !== undefined) codecs[CompressionTypes.ZSTD] = zstd;
      }
      console.log(
        `zstd inflating to 4 GiB (${frame.length} bytes compressed, four records of 1 GiB): published to ${topics.articles}[1] in ${Date.now() - started} ms`,
      );
    }
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

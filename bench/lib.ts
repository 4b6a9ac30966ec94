/** Shared pieces of the benchmarks: broker, data set, processes, measurements. */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import {
  createContractTopicSet,
  spawnServiceCommand,
  useServiceRuntime,
  waitUntil,
} from '../tools/harness.js';
import { freePort, startLocalBroker, stopLocalBroker } from '../tools/local-kafka.js';
import { appliedMessages, topicEndOffsets } from '../tools/model-progress.js';
import { phase } from './progress.js';
import { loopbackServiceEnv } from '../tools/service-env.js';
import type { TopicRole } from '../schemas/streams.js';
import { EventPublisher } from '../src/kafka/publisher.js';
import { demoEvents } from '../tools/demo-data.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import { codecNames, type CodecName } from '../src/kafka/codecs.js';
import { endOffsetsVia, publishingVia } from '../test/helpers/kafkajs-port.js';

export { endOffsetsVia, waitUntil };

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface BenchData {
  /** orders in the data set (default 1 000 000) */
  orders: number;
  organizations: number;
  /** orders of organization 1, the large one */
  largeOrganizationOrders: number;
  seed: number;
}

export const defaultData: BenchData = {
  orders: 1_000_000,
  organizations: 10_000,
  largeOrganizationOrders: 200_000,
  seed: 2026,
};

/** The default data set scaled to `orders`: a fifth of them in organization 1, an organization per 100 orders (10 to 10 000). */
export function benchDataOf(orders: number): BenchData {
  return {
    ...defaultData,
    orders,
    largeOrganizationOrders: Math.round(orders / 5),
    organizations: Math.min(defaultData.organizations, Math.max(10, Math.round(orders / 100))),
  };
}

export const benchKeyOf = (org: number): string => `bench-key-of-org-${org}`;
/** organizations that get an API key: the large one and a spread of others */
export const keyedOrganizations = (data: BenchData): number[] =>
  Array.from({ length: Math.min(data.organizations, 1000) }, (_, i) => i + 1);

/** A broker for the benchmark: KAFKA_BROKERS, else the project's local one (stopped by `close`). */
export async function benchBroker(): Promise<{ brokers: string; close: () => Promise<void> }> {
  const given = process.env['KAFKA_BROKERS'];
  if (given !== undefined && given !== '') return { brokers: given, close: () => Promise.resolve() };
  const broker = await startLocalBroker();
  return { brokers: broker.brokers, close: () => stopLocalBroker(broker) };
}

export function kafkaOf(brokers: string): Kafka {
  return new Kafka({ clientId: 'bench', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
}

export async function createBenchTopics(kafka: Kafka, prefix: string): Promise<Record<TopicRole, string>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await createContractTopicSet(admin, prefix);
  } finally {
    await admin.disconnect();
  }
}

/**
 * The contract's topics under `prefix` with the data set published into them, its progress shown: the
 * topics, the messages published and the total the topics' partitions hold.
 */
export async function publishedDataSet(
  kafka: Kafka,
  prefix: string,
  data: BenchData,
): Promise<{ topics: Record<TopicRole, string>; messages: number; total: number; publishMs: number }> {
  const topics = await createBenchTopics(kafka, prefix);
  const publishing = { published: 0 };
  const produced = await phase(
    `publish ${data.orders} orders`,
    () => publishBenchData(kafka, topics, data, 1, publishing),
    () => `${publishing.published} messages`,
  );
  const total = await topicEndOffsets(endOffsetsVia(kafka), Object.values(topics));
  return { topics, messages: produced.messages, total, publishMs: produced.ms };
}

/** A data set published on a broker: what a benchmark runs on. */
export interface DataSetOnBroker {
  brokers: string;
  topics: Record<TopicRole, string>;
  /** messages published */
  messages: number;
  /** messages the topics' partitions hold */
  total: number;
}

/**
 * The data set a benchmark runs on: `given` (the full run shares its own with the peer and the
 * workers), else a broker of its own (`benchBroker`) with the data set published under `prefix`.
 * `close` stops only what this call started.
 */
export async function dataSetFor(
  given: DataSetOnBroker | undefined,
  prefix: string,
  data: BenchData,
): Promise<DataSetOnBroker & { publishMs: number; close: () => Promise<void> }> {
  if (given !== undefined) return { ...given, publishMs: 0, close: () => Promise.resolve() };
  const broker = await benchBroker();
  try {
    const published = await publishedDataSet(kafkaOf(broker.brokers), `${prefix}-${Date.now()}`, data);
    return { brokers: broker.brokers, ...published, close: broker.close };
  } catch (error) {
    await broker.close();
    throw error;
  }
}

/** Publishes the data set (keys first) and returns how many messages and how long it took. */
export async function publishBenchData(
  kafka: Kafka,
  topics: Record<TopicRole, string>,
  data: BenchData,
  firstOrderId = 1,
  progress: { published: number } = { published: 0 },
): Promise<{ messages: number; ms: number }> {
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    allowAutoTopicCreation: false,
  });
  await producer.connect();
  const started = Date.now();
  // BENCH_COMPRESSION: the codec of the produced batches, as an upstream producer might choose.
  const codec = (process.env['BENCH_COMPRESSION'] ?? 'none') as CodecName;
  if (!codecNames.includes(codec))
    throw new Error(`BENCH_COMPRESSION must be one of ${codecNames.join(', ')}`);
  const publisher = new EventPublisher(publishingVia(producer, codec), topics);
  if (firstOrderId === 1) {
    for (const org of keyedOrganizations(data)) {
      await publisher.add({
        event_id: `bench-key-${org}`,
        type: 'api_key.issued',
        occurred_at: '2026-01-01T00:00:00Z',
        data: { key_id: `bench-${org}`, organization_id: org, key_sha256: sha256Hex(benchKeyOf(org)) },
      });
    }
  }
  for (const event of demoEvents({
    seed: data.seed + firstOrderId,
    organizations: data.organizations,
    orders: data.orders,
    articlesPerOrder: 5,
    firstOrderId,
    largestOrganizationOrders: firstOrderId === 1 ? data.largeOrganizationOrders : 0,
  })) {
    await publisher.add(event);
    progress.published = publisher.published;
  }
  await publisher.flush();
  await producer.disconnect();
  return { messages: publisher.published, ms: Date.now() - started };
}

type RawMessages = readonly { value: Buffer | null }[];

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The least any projector does with a message: decode its value as UTF-8 JSON. */
const parseValue = (value: Buffer): unknown => JSON.parse(utf8.decode(value));

export function parseEveryValue(messages: RawMessages): void {
  for (const message of messages) if (message.value !== null) parseValue(message.value);
}

/**
 * The least a durable projector does: decode every value and write one row per message, one
 * transaction per batch, into a fresh SQLite file set up as the read model is (WAL, synchronous
 * NORMAL). `close` deletes nothing; the file lives in `dir`.
 */
export function minimalProjector(dir: string): {
  handle: (messages: RawMessages) => void;
  close: () => void;
} {
  const db = new Database(join(dir, 'minimal-projector.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec('CREATE TABLE facts (id INTEGER PRIMARY KEY, type TEXT NOT NULL, at TEXT NOT NULL) STRICT');
  const insert = db.prepare('INSERT INTO facts (type, at) VALUES (?, ?)');
  const applyBatch = db.transaction((messages: RawMessages) => {
    for (const message of messages) {
      if (message.value === null) continue;
      const event = parseValue(message.value) as { type: string; occurred_at: string };
      insert.run(event.type, event.occurred_at);
    }
  });
  return { handle: (messages) => applyBatch(messages), close: () => db.close() };
}

/**
 * Baseline: a raw kafkajs eachBatch consumer reading every message once, with a no-op handler
 * unless `handle` is given.
 */
export async function rawConsume(
  kafka: Kafka,
  topics: Record<TopicRole, string>,
  total: number,
  handle: (messages: RawMessages) => void = () => undefined,
  progress: { seen: number } = { seen: 0 },
): Promise<{ ms: number }> {
  const consumer = kafka.consumer({ groupId: `bench-raw-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topics: Object.values(topics), fromBeginning: true });
  let seen = 0;
  let first = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((r) => (finish = r));
  await consumer.run({
    eachBatch: ({ batch }) => {
      if (first === 0) first = Date.now();
      handle(batch.messages);
      seen += batch.messages.length;
      progress.seen = seen;
      if (seen >= total) finish();
      return Promise.resolve();
    },
  });
  await done;
  const ms = Date.now() - first;
  await consumer.disconnect();
  return { ms };
}

export interface ServiceProcess {
  child: ChildProcess;
  httpPort: number;
  adminPort: number;
  exited: Promise<number | null>;
  stop: () => Promise<void>;
  /** peak resident set size so far (VmHWM), MB */
  peakRssMb: () => number;
}

/** How many bytes of `file` the page cache holds now (util-linux's `fincore`), or null without it. */
export function pageCacheBytes(file: string): number | null {
  try {
    return Number(
      execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', file], {
        encoding: 'utf8',
      }).trim(),
    );
  } catch {
    return null;
  }
}

/**
 * Writes every dirty page to disk (`sync`), then reads a file once from start to end, so that the
 * API figures that follow measure the service reading a model held in the OS page cache (the
 * steady state of a machine with memory to spare) rather than a virtual disk:
 *  - a replay, a snapshot and its restore leave up to gigabytes of dirty pages, which the kernel
 *    writes back 30 s later (`vm.dirty_expire_centisecs`), possibly in the middle of the figures;
 *    after the `sync`, /proc/meminfo showed under 1 MB dirty throughout bench:replicas' loads;
 *  - this machine's page cache was seen to shrink to about 1 GB with 22 GB free, and (e) on a
 *    1.2 GB model then measured from 214 to 4 336 req/s in runs minutes apart. Pages of a file
 *    read with `pread`, as SQLite reads the model, leave the page cache while nothing reads them,
 *    and pages of a mapped file stay (`bench:page-cache`): the kernel here runs a DAMON scheme that
 *    pages out unmapped file pages idle for a minute (/sys/kernel/mm/damon/admin), and something
 *    writes to /proc/sys/vm/drop_caches at times (`drop_pagecache` in /proc/vmstat).
 */
export function warmPageCache(file: string): void {
  execFileSync('sync');
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(4 * 1024 * 1024);
    while (readSync(fd, buffer, 0, buffer.length, null) > 0);
  } finally {
    closeSync(fd);
  }
}

/**
 * Builds the service (`npm run build`) and makes every later service process of this benchmark run
 * the built JavaScript, as `npm start` does: the figures, memory included, are the shipped service's,
 * with no transpiler loaded. The benchmarks' entry points call this; the smoke test runs the source.
 */
export function useBuiltService(): void {
  execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  useServiceRuntime('dist');
}

/**
 * The service on `dataDir`, ready to answer `/healthz`. `serviceRoot`: the built service of another
 * checkout (its `dist/src/main.js`), as bench:profile's `--before` runs an earlier commit.
 */
export async function startServiceProcess(
  brokers: string,
  topics: Record<TopicRole, string>,
  dataDir: string,
  extraEnv: Record<string, string> = {},
  serviceRoot?: string,
): Promise<ServiceProcess> {
  const httpPort = await freePort();
  const adminPort = await freePort();
  const env = {
    ...loopbackServiceEnv({
      brokers,
      groupId: `bench-${Date.now()}`,
      topics,
      dataDir,
      httpPort,
      adminPort,
      logLevel: 'warn',
    }),
    ...extraEnv,
  };
  const child = spawnServiceCommand(
    ['serve'],
    env,
    ['ignore', 'ignore', 'inherit'],
    serviceRoot === undefined ? {} : { root: serviceRoot },
  );
  const exited = new Promise<number | null>((r) => child.on('exit', r));
  const pid = child.pid ?? 0;
  const service: ServiceProcess = {
    child,
    httpPort,
    adminPort,
    exited,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
    peakRssMb: () => {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
        return Math.round(kb / 1024);
      } catch {
        return 0;
      }
    },
  };
  await waitUntil('the service answers /healthz', async () => {
    try {
      return (await fetch(`http://127.0.0.1:${adminPort}/healthz`)).ok;
    } catch {
      return false;
    }
  });
  return service;
}

/** Time from the first applied message until `total` are applied. */
export async function timeIngest(dataDir: string, total: number, timeoutMs: number): Promise<{ ms: number }> {
  let first = 0;
  await waitUntil(
    'every message is applied',
    () => {
      const applied = appliedMessages(dataDir);
      if (first === 0 && applied > 0) first = Date.now();
      return applied >= total;
    },
    timeoutMs,
    50,
  );
  return { ms: Date.now() - first };
}

export const rate = (count: number, ms: number): number => Math.round(count / Math.max(ms / 1000, 0.001));

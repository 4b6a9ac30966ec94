/**
 * `npm run bench:tracing`: what tracing costs the API, with no OTEL_* variable set (tracing off:
 * nothing of OpenTelemetry loaded) and with OTEL_EXPORTER_OTLP_ENDPOINT naming a receiver on
 * loopback (a span per request, exported in batches over OTLP/HTTP), in alternating rounds:
 *
 * 1. CPU time per request of the in-process app answering `/orders?limit=50` through `app.inject`
 *    (the export's encoding and posting included: they run in the same process), which a machine
 *    busy with other work disturbs less than a throughput does;
 * 2. wrk on `/orders?limit=50` against the built service (`npm start`) over a model of the seeded
 *    data set, with the key of the large organization (skipped with BENCH_WRK=0).
 *
 * The receiver answers every export and counts requests and bytes without decoding them, so that the
 * figures are the service's cost, not a collector's.
 *
 *   npm run bench:tracing   (BENCH_ORDERS default 20 000, BENCH_ROUNDS 3, BENCH_SECONDS 15,
 *                            BENCH_CONNECTIONS 8, BENCH_MIN_MS 1000 of CPU per figure)
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getProtoRoot } from '@elastic/mockotlpserver/lib/proto.js';
import { pino } from 'pino';
import { API_PREFIX } from '../schemas/api.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import { ReadModelReader } from '../src/read-model/reader.js';
import { startTracing } from '../src/tracing/tracing.js';
import { apiKeyIssued } from '../test/helpers/events.js';
import { memoryReadModel } from '../test/helpers/read-model.js';
import { demoEvents } from '../tools/demo-data.js';
import { cpuMicrosPerRequest } from './compression.js';
import { cpuMsOf } from './run.js';
import {
  benchBroker,
  benchDataOf,
  benchKeyOf,
  createBenchTopics,
  kafkaOf,
  publishBenchData,
  startServiceProcess,
  useBuiltService,
  waitUntil,
} from './lib.js';
import { apiReadsOfOneFile } from '../src/keys/key-lookup.js';

interface WrkFigures {
  requestsPerSecond: number;
  requests: number;
  /** CPU time of the service process (every thread) per request, over the measured run */
  serviceCpuMicros?: number;
  p50Ms: number;
  p99Ms: number;
}

/** wrk's latency in milliseconds from its text (`812.00us`, `1.20ms`, `1.02s`). */
function millis(text: string): number {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text);
  if (match === null) throw new Error(`unexpected wrk latency ${text}`);
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}

/** Runs wrk without blocking this process: the receiver in it must answer the exports meanwhile. */
async function wrk(url: string, seconds: number, connections: number): Promise<WrkFigures> {
  const { stdout: out } = await promisify(execFile)(
    'wrk',
    [
      '-t1',
      `-c${connections}`,
      `-d${seconds}s`,
      '--latency',
      '-H',
      `Authorization: Bearer ${benchKeyOf(1)}`,
      url,
    ],
    { encoding: 'utf8' },
  );
  const percentile = (p: string) => millis(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1] ?? 'NaNms');
  if (/Non-2xx/.test(out)) throw new Error(`wrk saw non-2xx answers:\n${out}`);
  return {
    requestsPerSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    requests: Number(/(\d+) requests in/.exec(out)?.[1]),
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
  };
}

/**
 * An OTLP/HTTP endpoint that accepts every export (an empty protobuf answer) and keeps its body, to
 * count its spans afterwards (`spans()`), not while the service is measured.
 */
async function keepingReceiver() {
  const received = { requests: 0, bytes: 0 };
  let bodies: Buffer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      received.requests += 1;
      received.bytes += body.length;
      bodies.push(body);
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  const exportRequest = getProtoRoot().lookupType(
    'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest',
  );
  /** The spans received since the last call. */
  const spans = (): number => {
    const count = bodies
      .flatMap((body) => exportRequest.decode(body).resourceSpans.flatMap((r) => r.scopeSpans))
      .reduce((sum, scope) => sum + scope.spans.length, 0);
    bodies = [];
    return count;
  };
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    spans,
    close: () => new Promise((done) => server.close(done)),
  };
}

/** CPU µs per request of the in-process app, tracing off and on, median of `rounds` alternating rounds. */
async function cpuPerRequest(receiverUrl: string, orders: number, rounds: number, minMs: number) {
  const model = memoryReadModel();
  model.apply(apiKeyIssued('bench-key', 1, sha256Hex(benchKeyOf(1))));
  model.applyInBatches(500, [
    ...demoEvents({
      seed: 7,
      organizations: 50,
      orders,
      articlesPerOrder: 5,
      largestOrganizationOrders: orders / 4,
    }),
  ]);
  const reader = new ReadModelReader(model.db);
  // the service logs two lines per request at its default level; here they go nowhere
  const logger = pino({ level: 'info' }, { write: () => undefined });
  const tracing = await startTracing(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl }).tracing,
    logger,
  );
  const apps = {
    off: await buildApp({ readerOf: () => apiReadsOfOneFile(reader), logger }),
    on: await buildApp({ readerOf: () => apiReadsOfOneFile(reader), logger, tracing: tracing ?? undefined }),
  };
  const cpu: Record<string, number[]> = { off: [], on: [] };
  let tracedRequests = 0;
  for (let round = 0; round < rounds; round += 1) {
    for (const [mode, app] of Object.entries(apps)) {
      const request = async () => {
        const answer = await app.inject({
          method: 'GET',
          url: `${API_PREFIX}/orders?limit=50`,
          headers: { authorization: `Bearer ${benchKeyOf(1)}` },
        });
        if (answer.statusCode !== 200) throw new Error('the page is not answered');
        if (mode === 'on') tracedRequests += 1;
        // inject answers without I/O: a turn of the event loop lets the exports (sockets) go on, as a server's loop does
        await new Promise((turn) => setImmediate(turn));
      };
      cpu[mode]?.push(await cpuMicrosPerRequest(request, minMs));
    }
  }
  await Promise.all(Object.values(apps).map((app) => app.close()));
  await tracing?.shutdown();
  model.db.close();
  return { cpu, tracedRequests };
}

const median = (values: number[]): number =>
  values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const orders = Number(process.env['BENCH_ORDERS'] ?? 20_000);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const seconds = Number(process.env['BENCH_SECONDS'] ?? 15);
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 8);
  const minMs = Number(process.env['BENCH_MIN_MS'] ?? 1000);
  const receiver = await keepingReceiver();
  const { cpu, tracedRequests } = await cpuPerRequest(receiver.url, orders, rounds, minMs);
  console.log(`in-process app, /orders?limit=50, CPU µs per request, median of ${rounds} rounds (each):`);
  for (const [mode, values] of Object.entries(cpu)) {
    console.log(
      `  tracing ${mode}: ${median([...values]).toFixed(1)} (${values.map((v) => v.toFixed(1)).join(', ')})`,
    );
  }
  console.log(`${tracedRequests} traced requests, ${receiver.spans()} spans received`);
  if (process.env['BENCH_WRK'] === '0') {
    await receiver.close();
    return;
  }
  useBuiltService();
  const broker = await benchBroker();
  const dir = mkdtempSync(join(tmpdir(), 'bench-tracing-'));
  try {
    const kafka = kafkaOf(broker.brokers);
    const topics = await createBenchTopics(kafka, `bench-tracing-${Date.now()}`);
    const data = benchDataOf(orders);
    const published = await publishBenchData(kafka, topics, data);
    console.log(`published ${published.messages} messages in ${published.ms} ms`);
    const modes: Record<string, Record<string, string>> = {
      'tracing off (no OTEL_* set)': {},
      'tracing on (OTLP/HTTP to loopback)': { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    };
    const figures: Record<string, WrkFigures[]> = {};
    for (let round = 0; round < rounds; round += 1) {
      for (const [mode, env] of Object.entries(modes)) {
        const service = await startServiceProcess(broker.brokers, topics, join(dir, 'data'), env);
        const ready = `http://127.0.0.1:${service.adminPort}/readyz`;
        await waitUntil('the model has caught up', async () => (await fetch(ready)).ok, 600_000, 500);
        const url = `http://127.0.0.1:${service.httpPort}${API_PREFIX}/orders?limit=50`;
        const warmUp = await wrk(url, 3, connections);
        receiver.spans();
        const pid = service.child.pid ?? 0;
        const cpuBefore = cpuMsOf(pid) ?? NaN;
        const result = await wrk(url, seconds, connections);
        result.serviceCpuMicros = Math.round((((cpuMsOf(pid) ?? NaN) - cpuBefore) * 1000) / result.requests);
        await service.stop();
        // the stop exported what was left; a request's span is counted with the warm-up's when the warm-up's were late
        const spans = receiver.spans();
        (figures[mode] ??= []).push(result);
        console.log(
          `round ${round + 1}, ${mode}: ${JSON.stringify(result)}, spans received ${spans} (warm-up ${warmUp.requests} requests)`,
        );
      }
    }
    console.log(
      `\nwrk -t1 -c${connections} -d${seconds}s on /orders?limit=50, ${orders} orders, median of ${rounds} rounds:`,
    );
    console.log(
      '| mode | service CPU µs/request | req/s | p50 ms | p99 ms | rounds (CPU µs/request; req/s) |',
    );
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const [mode, results] of Object.entries(figures)) {
      console.log(
        `| ${mode} | ${median(results.map((r) => r.serviceCpuMicros ?? NaN))} | ${Math.round(median(results.map((r) => r.requestsPerSecond)))} | ${median(results.map((r) => r.p50Ms)).toFixed(2)} | ${median(results.map((r) => r.p99Ms)).toFixed(2)} | ${results.map((r) => r.serviceCpuMicros).join(', ')}; ${results.map((r) => Math.round(r.requestsPerSecond)).join(', ')} |`,
      );
    }
    console.log(`\nthe receiver got ${receiver.received.requests} exports, ${receiver.received.bytes} bytes`);
  } finally {
    await receiver.close();
    await broker.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * `npm run bench:compression`: what compressing the API's answers costs and saves, to choose the
 * threshold and the levels of `src/http/plugins/compression.ts`. In one process, no broker:
 *
 * 1. the answers (pages of 1, 3, 10, 50 and 200 orders of the seeded demo data, an order's
 *    articles, an error) compressed with node:zlib at several gzip levels and brotli qualities:
 *    bytes, and CPU time per answer;
 * 2. the in-process app answering `/orders?limit=10`, `limit=50` and `limit=200` through
 *    `app.inject` without `Accept-Encoding`, with `gzip` and with `br`: CPU time per request, with
 *    the chosen settings and with brotli at quality 4 and gzip at level 6.
 */
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/http/app.js';
import { compressionSettings, type CompressionSettings } from '../src/http/plugins/compression.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import { ReadModelReader } from '../src/read-model/reader.js';
import { apiKeyIssued } from '../test/helpers/events.js';
import { memoryReadModel } from '../test/helpers/read-model.js';
import { demoEvents } from '../tools/demo-data.js';
import { isEntryPoint } from '../tools/harness.js';
import { apiReadsOfOneFile } from '../src/keys/key-lookup.js';

const v1 = '/api/external-api/v1';
const key = 'bench-key-of-org-1';
const round1 = (value: number): number => Math.round(value * 10) / 10;

/** CPU microseconds (user + system) per call of `work`, over at least `minMs` of CPU time. */
export function cpuMicrosPerCall(work: () => unknown, minMs = 200): number {
  for (let i = 0; i < 20; i += 1) work();
  let calls = 0;
  const start = process.cpuUsage();
  let spent = 0;
  while (spent < minMs * 1000) {
    for (let i = 0; i < 20; i += 1) work();
    calls += 20;
    const used = process.cpuUsage(start);
    spent = used.user + used.system;
  }
  return spent / calls;
}

/** The same, for an asynchronous `work`. */
export async function cpuMicrosPerRequest(work: () => Promise<unknown>, minMs = 300): Promise<number> {
  for (let i = 0; i < 50; i += 1) await work();
  let calls = 0;
  const start = process.cpuUsage();
  let spent = 0;
  while (spent < minMs * 1000) {
    for (let i = 0; i < 20; i += 1) await work();
    calls += 20;
    const used = process.cpuUsage(start);
    spent = used.user + used.system;
  }
  return spent / calls;
}

export const codecs: Record<string, (body: Buffer) => Buffer> = {
  'gzip 1': (body) => gzipSync(body, { level: 1 }),
  'gzip 6': (body) => gzipSync(body, { level: 6 }),
  'gzip 9': (body) => gzipSync(body, { level: 9 }),
  ...Object.fromEntries(
    [1, 2, 3, 4, 5, 6, 11].map((quality) => [
      `br ${quality}`,
      (body: Buffer) =>
        brotliCompressSync(body, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: quality,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.length,
          },
        }),
    ]),
  ),
};

export async function benchCompression(options: { orders: number; minMs: number; rounds: number }) {
  const model = memoryReadModel();
  model.apply(apiKeyIssued('bench-key', 1, sha256Hex(key)));
  const events = [
    ...demoEvents({
      seed: 7,
      organizations: 50,
      orders: options.orders,
      articlesPerOrder: 5,
      largestOrganizationOrders: Math.ceil(options.orders / 4),
    }),
  ];
  model.applyInBatches(500, events);
  const reader = new ReadModelReader(model.db);
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
  });
  const get = (url: string, encoding?: string, on: FastifyInstance = app) =>
    on.inject({
      method: 'GET',
      url: `${v1}${url}`,
      headers: {
        authorization: `Bearer ${key}`,
        ...(encoding === undefined ? {} : { 'accept-encoding': encoding }),
      },
    });
  const full = await get('/orders?limit=200');
  // what a listing's status line and headers weigh on the wire, next to its body
  const headerBytes =
    `HTTP/1.1 200 OK\r\n`.length +
    Object.entries(full.headers).reduce(
      (sum, [name, value]) => sum + name.length + String(value).length + 4,
      2,
    );
  const firstPage = JSON.parse(full.body) as { data: { id: number }[] };
  let articlesOf = firstPage.data[0]?.id ?? 1;
  for (const order of firstPage.data) {
    const articles = JSON.parse((await get(`/orders/${order.id}/articles`)).body) as { data: unknown[] };
    if (articles.data.length >= 5) {
      articlesOf = order.id;
      break;
    }
  }
  const answers: Record<string, string> = {
    'error 404': (await get('/orders/999999999/articles')).body,
    'orders limit=1': (await get('/orders?limit=1')).body,
    'orders limit=3': (await get('/orders?limit=3')).body,
    'articles of an order': (await get(`/orders/${articlesOf}/articles`)).body,
    'orders limit=10': (await get('/orders?limit=10')).body,
    'orders limit=50': (await get('/orders?limit=50')).body,
    'orders limit=200': (await get('/orders?limit=200')).body,
  };
  const sizes: Record<
    string,
    Record<string, { bytes: number; savedPercent: number; cpuMicros: number }>
  > = {};
  for (const [name, text] of Object.entries(answers)) {
    const body = Buffer.from(text);
    sizes[name] = {
      identity: { bytes: body.length, savedPercent: 0, cpuMicros: 0 },
      ...Object.fromEntries(
        Object.entries(codecs).map(([codec, run]) => {
          const bytes = run(body).length;
          return [
            codec,
            {
              bytes,
              savedPercent: round1((1 - bytes / body.length) * 100),
              cpuMicros: round1(cpuMicrosPerCall(() => run(body), options.minMs)),
            },
          ];
        }),
      ),
    };
  }
  // The app with other settings answers from the same model.
  const variants: Record<string, CompressionSettings> = {
    chosen: compressionSettings,
    'br 4, gzip 6': { ...compressionSettings, brotliQuality: 4, gzipLevel: 6 },
  };
  const apps = await Promise.all(
    Object.values(variants).map((compression) =>
      buildApp({ readerOf: () => apiReadsOfOneFile(reader), logger: pino({ level: 'silent' }), compression }),
    ),
  );
  const requests: Record<string, Record<string, { cpuMicrosPerRequest: number; bytes: number }>> = {};
  for (const limit of [10, 50, 200]) {
    const url = `/orders?limit=${limit}`;
    const cells: Record<string, { cpu: number[]; bytes: number }> = {};
    // one load at a time (the CPU time measured is the whole process's), in turns over the rounds
    // so that a drift of the machine's speed weighs on each alike; the median of the rounds
    for (let round = 0; round < options.rounds; round += 1) {
      for (const [v, variant] of Object.keys(variants).entries()) {
        const on = apps[v] ?? app;
        for (const encoding of [undefined, 'gzip', 'br']) {
          if (encoding === undefined && v > 0) continue;
          const name = encoding === undefined ? 'identity' : `${encoding}, ${variant}`;
          const request = () => get(url, encoding, on);
          const bytes = (await request()).rawPayload.length;
          const cell = (cells[name] ??= { cpu: [], bytes });
          cell.cpu.push(await cpuMicrosPerRequest(request, options.minMs));
        }
      }
    }
    requests[`orders limit=${limit}`] = Object.fromEntries(
      Object.entries(cells).map(([name, cell]) => [
        name,
        {
          cpuMicrosPerRequest: round1(cell.cpu.sort((x, y) => x - y)[Math.floor(cell.cpu.length / 2)] ?? 0),
          bytes: cell.bytes,
        },
      ]),
    );
  }
  await Promise.all(apps.map((other) => other.close()));
  await app.close();
  model.db.close();
  return { settings: compressionSettings, rounds: options.rounds, headerBytes, answers: sizes, requests };
}

function table(result: Awaited<ReturnType<typeof benchCompression>>): string {
  const codecNames = ['identity', ...Object.keys(codecs)];
  const lines = [
    `node:zlib alone: bytes (change), CPU µs per answer. Status line and headers of a listing: ${result.headerBytes} B`,
    '',
    `| answer | ${codecNames.join(' | ')} |`,
    `| --- | ${codecNames.map(() => '---').join(' | ')} |`,
    ...Object.entries(result.answers).map(
      ([name, row]) =>
        `| ${name} | ${codecNames
          .map((codec) => {
            const cell = row[codec];
            if (cell === undefined) return '';
            return codec === 'identity'
              ? `${cell.bytes} B`
              : `${cell.bytes} B (${cell.savedPercent > 0 ? '−' : '+'}${Math.abs(cell.savedPercent)} %), ${cell.cpuMicros} µs`;
          })
          .join(' | ')} |`,
    ),
    '',
    `in-process app (\`app.inject\`), chosen settings ${JSON.stringify(result.settings)}: CPU µs per request (median of ${result.rounds} rounds), bytes sent`,
    `| request | ${Object.keys(Object.values(result.requests)[0] ?? {}).join(' | ')} |`,
    `| --- | ${Object.keys(Object.values(result.requests)[0] ?? {})
      .map(() => '---')
      .join(' | ')} |`,
    ...Object.entries(result.requests).map(
      ([name, row]) =>
        `| ${name} | ${Object.values(row)
          .map((cell) => `${cell.cpuMicrosPerRequest} µs, ${cell.bytes} B`)
          .join(' | ')} |`,
    ),
  ];
  return lines.join('\n');
}

if (isEntryPoint(import.meta.url)) {
  const result = await benchCompression({
    orders: Number(process.env['BENCH_ORDERS'] ?? 4000),
    minMs: Number(process.env['BENCH_MIN_MS'] ?? 300),
    rounds: Number(process.env['BENCH_ROUNDS'] ?? 5),
  });
  console.log(table(result));
}

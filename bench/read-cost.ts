/**
 * Why a read costs more between requests than in a loop (issue 28), in one process with no broker:
 * `npm run bench:read-cost` (`BENCH_ORDERS` default 50 000, `BENCH_SECONDS` of wrk per figure
 * default 5).
 *
 * On a model file built from the seeded demo data it times the page read of `/orders?limit=50`
 * (random organizations) itself, with `performance.now()` around the reader's call and nothing
 * else, in four settings:
 *   1. in a loop, one read after another;
 *   2. after touching K bytes of other memory (a buffer read with a 64-byte stride, as the HTTP
 *      stack's work touches its own), for K from 0 to 32 MiB: what the read costs once the CPU
 *      caches hold other data;
 *   3. inside requests answered by the service's HTTP app through `app.inject` (no socket);
 *   4. inside requests the same app answers on a loopback port under wrk (a process of its own).
 * With no hardware counters on this virtual machine (`perf stat` reports none supported), the
 * second setting stands in for cache-miss counts: if the read grows with K as it grows inside a
 * request, the extra cost is the caches, not the code.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { buildApp } from '../src/http/app.js';
import { sha256Hex } from '../src/http/auth.js';
import { openReadModel } from '../src/read-model/database.js';
import { ReadModelReader, type ApiReads, type OrderPageQuery } from '../src/read-model/reader.js';
import { apiKeyIssued } from '../test/helpers/events.js';
import { memoryReadModel } from '../test/helpers/read-model.js';
import { demoEvents } from '../tools/demo-data.js';
import { isEntryPoint } from '../tools/harness.js';
import { wrk } from './peers/wrk.js';

const v1 = '/api/external-api/v1';
const round1 = (value: number): number => Math.round(value * 10) / 10;

export async function measureReadCost(
  orders: number,
  seconds: number,
  samples = 20_000,
): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'read-cost-'));
  const file = join(dir, 'model.sqlite');
  try {
    const organizations = Math.max(10, Math.round(orders / 100));
    const model = memoryReadModel(openReadModel(file));
    const keys = Array.from({ length: organizations }, (_, i) => `bench-key-of-org-${i + 1}`);
    model.apply(...keys.map((key, i) => apiKeyIssued(`k${i + 1}`, i + 1, sha256Hex(key))));
    model.applyInBatches(500, [...demoEvents({ seed: 7, organizations, orders, articlesPerOrder: 3 })]);
    model.db.close();

    const reader = new ReadModelReader(openReadModel(file, { readonly: true }), {
      cacheKeys: true,
      cacheChanges: true,
    });
    let next = 0;
    const query = (): OrderPageQuery => {
      next = (next * 1103515245 + 12345) % 2 ** 31;
      return { orgId: 1 + (next % organizations), status: null, limit: 50, offset: 0 };
    };
    /** mean µs of the reads timed since the last call */
    let spent = 0;
    let reads = 0;
    const timedRead = (q: OrderPageQuery): ReturnType<typeof reader.orderPage> => {
      const started = performance.now();
      const page = reader.orderPage(q);
      spent += performance.now() - started;
      reads += 1;
      return page;
    };
    const meanRead = (): number => {
      const mean = (spent * 1000) / Math.max(1, reads);
      spent = 0;
      reads = 0;
      return round1(mean);
    };
    const figures: Record<string, number> = {};
    const loop = (): number => {
      for (let i = 0; i < samples; i++) timedRead(query());
      return meanRead();
    };
    loop();
    figures['1. in a loop'] = loop();

    const other = Buffer.alloc(32 * 1024 * 1024, 1);
    let sink = 0;
    for (const kib of [0, 64, 256, 1024, 2048, 4096, 16_384, 32_768]) {
      const bytes = kib * 1024;
      for (let i = 0; i < Math.min(samples, 2000); i++) {
        for (let at = 0; at < bytes; at += 64) sink += other[at]!;
        timedRead(query());
      }
      figures[`2. after touching ${kib} KiB`] = meanRead();
    }
    if (sink === 0) throw new Error('nothing was touched');

    const api: ApiReads = {
      orgOfKeyHash: (hash) => reader.orgOfKeyHash(hash),
      orderPage: timedRead,
      articlesOfOrder: (org, order) => reader.articlesOfOrder(org, order),
      inSnapshot: (read) =>
        reader.inSnapshot((model) =>
          read({
            orgDigest: (org) => model.orgDigest(org),
            orderDigest: (order) => model.orderDigest(order),
            orderPage: timedRead,
            articlesOfOrder: (org, order) => model.articlesOfOrder(org, order),
            position: () => model.position(),
          }),
        ),
    };
    const app = await buildApp({ readerOf: () => api, logger: pino({ level: 'silent' }) });
    for (let i = 0; i < samples; i++) {
      next = (next * 1103515245 + 12345) % 2 ** 31;
      const response = await app.inject({
        method: 'GET',
        url: `${v1}/orders?limit=50`,
        headers: { authorization: `Bearer ${keys[next % organizations]}` },
      });
      if (response.statusCode !== 200) throw new Error(`answered ${response.statusCode}`);
      if (i === 200) meanRead();
    }
    figures['3. inside requests (app.inject)'] = meanRead();

    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const origin = `http://127.0.0.1:${address.port}`;
    const load = keys.map((key) => ({ path: `${v1}/orders?limit=50`, key }));
    // wrk runs as a process of its own: the event loop here answers while it waits
    await wrk(origin, load, 2);
    meanRead();
    const cpuBefore = process.cpuUsage();
    const measured = await wrk(origin, load, seconds);
    const cpu = process.cpuUsage(cpuBefore);
    figures['4. inside requests (wrk, loopback)'] = meanRead();
    figures['4. server CPU per request (wrk)'] = round1((cpu.user + cpu.system) / measured.requests);
    figures['4. req/s (wrk)'] = measured.rps;
    await app.close();

    // The stack's own cost: the same app with every read answered by one constant page.
    const constantPage = reader.orderPage({ orgId: 1, status: null, limit: 50, offset: 0 });
    const constant = await buildApp({
      readerOf: () => ({ ...api, orderPage: () => constantPage }),
      logger: pino({ level: 'silent' }),
    });
    await constant.listen({ host: '127.0.0.1', port: 0 });
    const constantAddress = constant.server.address();
    if (constantAddress === null || typeof constantAddress === 'string') throw new Error('no port');
    const constantOrigin = `http://127.0.0.1:${constantAddress.port}`;
    await wrk(constantOrigin, load, 2);
    const constantBefore = process.cpuUsage();
    const constantRun = await wrk(constantOrigin, load, seconds);
    const constantCpu = process.cpuUsage(constantBefore);
    figures['5. stack alone, constant page: server CPU per request (wrk)'] = round1(
      (constantCpu.user + constantCpu.system) / constantRun.requests,
    );
    figures['goal: 1.5 × (stack alone + read in a loop)'] = round1(
      1.5 *
        (figures['5. stack alone, constant page: server CPU per request (wrk)'] + figures['1. in a loop']),
    );
    await constant.close();
    reader.db.close();
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isEntryPoint(import.meta.url)) {
  const orders = Number(process.env['BENCH_ORDERS'] ?? 50_000);
  const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
  const figures = await measureReadCost(orders, seconds);
  console.log(`read cost, ${new Date().toISOString()}, Node ${process.version}, ${orders} orders\n`);
  console.log('| figure | µs per read (wall clock around the call) |\n|---|---|');
  for (const [name, value] of Object.entries(figures)) console.log(`| ${name} | ${value} |`);
}

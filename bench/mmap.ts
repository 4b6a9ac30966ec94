/**
 * `npm run bench:mmap`: does mapping the model (`PRAGMA mmap_size`) make the service's reads
 * cheaper? In one process, no broker: a model file of `--orders` orders of the seeded demo data,
 * read by two readers opened as the service opens its own (`openReadModel`, read-only), one as it
 * ships (no map) and one with `mmap_size` set to the file's size or more. Blocks of `--reads` reads
 * of `/orders?limit=50` pages and of articles (organizations and orders drawn by a seeded
 * generator, the same for both), in turns (ABBA) over `--rounds`; each block timed by this thread's
 * CPU time. Both readers share one process, so no memory figure is given.
 *
 *   npm run bench:mmap -- [--orders 100000] [--reads 20000] [--rounds 6]
 *
 * Writes bench/results/mmap-<time>.json.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openReadModel } from '../src/read-model/database.js';
import { ReadModelReader } from '../src/read-model/reader.js';
import { memoryReadModel } from '../test/helpers/read-model.js';
import { demoEvents, seededRandom } from '../tools/demo-data.js';
import { root } from './lib.js';
import { spread } from './peers/rounds.js';

const { values } = parseArgs({
  options: {
    orders: { type: 'string', default: '100000' },
    reads: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '6' },
  },
});
const orders = Number(values.orders);
const reads = Number(values.reads);
const rounds = Number(values.rounds);
if (!(orders >= 100 && reads >= 100 && rounds >= 2))
  throw new Error('--orders ≥ 100, --reads ≥ 100, --rounds ≥ 2');

const threadCpu = (): number => {
  const usage = process.threadCpuUsage();
  return usage.user + usage.system;
};

const dir = mkdtempSync(join(tmpdir(), 'bench-mmap-'));
try {
  const file = join(dir, 'model.sqlite');
  const organizations = Math.max(10, Math.round(orders / 100));
  const model = memoryReadModel(openReadModel(file));
  model.applyInBatches(500, [...demoEvents({ seed: 7, organizations, orders, articlesPerOrder: 3 })]);
  model.db.close();
  const fileBytes = statSync(file).size;
  const mmapBytes = 2 ** Math.ceil(Math.log2(fileBytes));
  const open = (mapped: boolean): ReadModelReader => {
    const db = openReadModel(file, { readonly: true });
    if (mapped) db.pragma(`mmap_size = ${mmapBytes}`);
    return new ReadModelReader(db);
  };
  const sides = { unmapped: open(false), mapped: open(true) };
  const listed = sides.unmapped.db
    .prepare('SELECT org_id, order_id FROM orders WHERE listed_status IS NOT NULL ORDER BY order_id')
    .raw(true)
    .all() as [number, number][];
  const cpu: Record<string, Record<'orders' | 'articles', number[]>> = {
    unmapped: { orders: [], articles: [] },
    mapped: { orders: [], articles: [] },
  };
  const block = (name: keyof typeof sides, seed: number): void => {
    const reader = sides[name];
    const random = seededRandom(seed);
    let started = threadCpu();
    for (let i = 0; i < reads; i += 1) {
      reader.inReadTransaction((m) =>
        m.orderPage({ orgId: 1 + Math.floor(random() * organizations), status: null, limit: 50, offset: 0 }),
      );
    }
    cpu[name]!.orders.push((threadCpu() - started) / reads);
    started = threadCpu();
    for (let i = 0; i < reads; i += 1) {
      const [org, order] = listed[Math.floor(random() * listed.length)]!;
      reader.inReadTransaction((m) => m.articlesOfOrder(org, order));
    }
    cpu[name]!.articles.push((threadCpu() - started) / reads);
  };
  // a warm-up block each, then ABBA rounds on the same draws
  block('unmapped', 1);
  block('mapped', 1);
  for (const name of Object.keys(cpu)) cpu[name] = { orders: [], articles: [] };
  for (let round = 0; round < rounds; round += 1) {
    const order: (keyof typeof sides)[] = round % 2 === 0 ? ['unmapped', 'mapped'] : ['mapped', 'unmapped'];
    for (const name of order) block(name, 100 + round);
  }
  const figure = (name: string, endpoint: 'orders' | 'articles') => spread(cpu[name]![endpoint]);
  const ratio = (endpoint: 'orders' | 'articles') =>
    spread(cpu['mapped']![endpoint].map((value, i) => value / cpu['unmapped']![endpoint][i]!));
  const results = {
    command: `npm run bench:mmap -- --orders ${orders} --reads ${reads} --rounds ${rounds}`,
    node: process.version,
    orders,
    organizations,
    fileBytes,
    mmapBytes,
    cpuMicrosPerRead: {
      orders: { unmapped: figure('unmapped', 'orders'), mapped: figure('mapped', 'orders') },
      articles: { unmapped: figure('unmapped', 'articles'), mapped: figure('mapped', 'articles') },
    },
    mappedToUnmapped: { orders: ratio('orders'), articles: ratio('articles') },
  };
  const out = join(root, 'bench', 'results', `mmap-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(JSON.stringify(results, null, 2));
  console.log(`results: ${out}`);
  for (const reader of Object.values(sides)) reader.db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

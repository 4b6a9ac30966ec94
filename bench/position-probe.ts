/**
 * Is every answer's page within its own position? A live probe of `X-Read-Position` during ingest:
 *   node --import tsx bench/position-probe.ts [--workers 1,2] [--seconds 20] [--pollers 6]
 * For each HTTP_WORKERS value: topics with one partition each (so an order's offset on the orders
 * topic says exactly whether a position includes it), a key for organization 1, a service started
 * on them (from this checkout's source), and orders of organization 1 published in small batches
 * while `--pollers` callers poll `/orders?limit=20` (half of them conditional, with the tag they
 * were last given). The offset of every order is what the broker acknowledged for it. An answer is
 * a violation when its page holds an order at an offset its token says the model has not read
 * (offset ≥ the token's next offset of the orders topic). Prints the counts and writes
 * bench/results/position-probe-<UTC date-time>.json. KAFKA_BROKERS names a broker, else the
 * project's local one is started.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sha256Hex } from '../src/http/bearer-key.js';
import { messageKeyOf } from '../src/kafka/publisher.js';
import { apiKeyIssued, at, orderCreated } from '../test/helpers/events.js';
import { createContractTopicSet, isEntryPoint, projectRoot } from '../tools/harness.js';
import { benchBroker, kafkaOf, startServiceProcess, waitUntil } from './lib.js';

const v1 = '/api/external-api/v1';
const key = 'position-probe-key';
/** Most orders a run publishes: the bound of the offsets' table. */
const maxOrders = 200_000;

/** The next offset of partition 0 of `topic` a token names (its format: `src/http/position.ts`). */
export function nextOffsetIn(token: string, topic: string): number | null {
  const bytes = Buffer.from(token, 'base64url');
  if (bytes[0] !== 1) return null;
  const wanted = createHash('sha256').update(topic).digest().subarray(0, 3);
  let at = 1;
  const varint = (): number => {
    let value = 0;
    for (let i = 0; i < 8; i++) {
      const byte = bytes[at++] ?? 0;
      value += (byte & 0x7f) * 2 ** (7 * i);
      if (byte < 0x80) break;
    }
    return value;
  };
  while (at + 3 <= bytes.length) {
    const id = bytes.subarray(at, at + 3);
    at += 3;
    const offsets = Array.from({ length: varint() }, varint);
    if (id.equals(wanted)) return offsets[0] ?? 0;
  }
  return 0;
}

interface RunFigures {
  workers: number;
  seconds: number;
  ordersPublished: number;
  answers: number;
  ok200: number;
  notModified304: number;
  other: number;
  /** 200s whose page holds an order at an offset its token says was not read */
  pageNewerThanToken: number;
  /** the largest gap seen, in orders */
  worstGap: number;
  loadAverage: number;
}

async function probeOnce(
  brokers: string,
  workers: number,
  seconds: number,
  pollers: number,
): Promise<RunFigures> {
  const kafka = kafkaOf(brokers);
  const admin = kafka.admin();
  await admin.connect();
  const topics = await createContractTopicSet(admin, `position-probe-${Date.now()}-w${workers}`, 1);
  await admin.disconnect();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const issued = apiKeyIssued('probe-key', 1, sha256Hex(key));
  await producer.send({
    topic: topics.apiKeys,
    messages: [{ key: messageKeyOf(issued), value: JSON.stringify(issued) }],
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'position-probe-'));
  const service = await startServiceProcess(brokers, topics, dataDir, { HTTP_WORKERS: String(workers) });
  const base = `http://127.0.0.1:${service.httpPort}${v1}`;
  const headers = { authorization: `Bearer ${key}` };
  await waitUntil('the key is served', async () => {
    try {
      return (await fetch(`${base}/orders`, { headers })).status === 200;
    } catch {
      return false;
    }
  });

  /** offset on the orders topic of each order id, as the broker acknowledged it */
  const offsetOf = new Map<number, number>();
  /** per 200: the token's next offset and the newest order of the page (ids grow with offsets) */
  const seen: { next: number; newestId: number }[] = [];
  const figures = { answers: 0, ok200: 0, notModified304: 0, other: 0 };
  const until = performance.now() + seconds * 1000;
  let nextId = 1;
  const publishing = (async () => {
    while (performance.now() < until && nextId <= maxOrders) {
      const batch = Array.from({ length: 5 }, () => {
        const id = nextId++;
        return orderCreated(
          { order_id: id, organization_id: 1 },
          { occurred_at: new Date(Date.parse(at(0)) + id * 1000).toISOString() },
        );
      });
      const [ack] = await producer.send({
        topic: topics.orders,
        acks: -1,
        messages: batch.map((event) => ({ key: messageKeyOf(event), value: JSON.stringify(event) })),
      });
      const baseOffset = Number(ack?.baseOffset ?? Number.NaN);
      batch.forEach((event, i) => offsetOf.set(event.data.order_id, baseOffset + i));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const polling = Array.from({ length: pollers }, async (_, index) => {
    const conditional = index % 2 === 1;
    let tag: string | null = null;
    while (performance.now() < until) {
      const response = await fetch(`${base}/orders?limit=20`, {
        headers: conditional && tag !== null ? { ...headers, 'if-none-match': tag } : headers,
      });
      const text = await response.text();
      figures.answers += 1;
      if (response.status === 304) {
        figures.notModified304 += 1;
        continue;
      }
      if (response.status !== 200) {
        figures.other += 1;
        continue;
      }
      figures.ok200 += 1;
      tag = response.headers.get('etag');
      const token = response.headers.get('x-read-position') ?? '';
      const body = JSON.parse(text) as { data: { id: number }[] };
      const newestId = Math.max(0, ...body.data.map((order) => order.id));
      seen.push({ next: nextOffsetIn(token, topics.orders) ?? -1, newestId });
    }
  });
  await Promise.all([publishing, ...polling]);
  await producer.disconnect();
  await service.stop();
  rmSync(dataDir, { recursive: true, force: true });

  let pageNewerThanToken = 0;
  let worstGap = 0;
  for (const { next, newestId } of seen) {
    if (newestId === 0) continue;
    const offset = offsetOf.get(newestId);
    if (offset === undefined) throw new Error(`order ${newestId} was served but never acknowledged`);
    if (offset >= next) {
      pageNewerThanToken += 1;
      worstGap = Math.max(worstGap, offset - next + 1);
    }
  }
  return {
    workers,
    seconds,
    ordersPublished: nextId - 1,
    ...figures,
    pageNewerThanToken,
    worstGap,
    loadAverage: loadavg()[0] ?? 0,
  };
}

export async function positionProbe(options: {
  workers: number[];
  seconds: number;
  pollers: number;
}): Promise<RunFigures[]> {
  const broker = await benchBroker();
  try {
    const runs: RunFigures[] = [];
    for (const workers of options.workers) {
      const run = await probeOnce(broker.brokers, workers, options.seconds, options.pollers);
      console.log(JSON.stringify(run));
      runs.push(run);
    }
    return runs;
  } finally {
    await broker.close();
  }
}

if (isEntryPoint(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      workers: { type: 'string', default: '1,2' },
      seconds: { type: 'string', default: '20' },
      pollers: { type: 'string', default: '6' },
    },
  });
  const workers = values.workers.split(',').map(Number);
  const seconds = Number(values.seconds);
  const pollers = Number(values.pollers);
  const bad = (n: number, max: number): boolean => !Number.isInteger(n) || n < 1 || n > max;
  if (workers.some((n) => bad(n, 16)) || bad(seconds, 600) || bad(pollers, 64)) {
    throw new Error('--workers 1..16 (a list), --seconds 1..600, --pollers 1..64');
  }
  const runs = await positionProbe({ workers, seconds, pollers });
  const dir = join(projectRoot, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `position-probe-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ pollers, runs }, null, 2)}\n`);
  console.log(`written ${file}`);
}

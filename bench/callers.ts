/**
 * What callers who stop polling blind get (docs/api.md: "Waiting for a change", "Cursors: pages
 * that survive inserts", "A position a publisher builds"), measured from outside: one built service
 * process on a real broker, logs at the default level, every figure from HTTP answers and the
 * process's CPU time (`/proc/<pid>/stat`, every thread).
 *
 *   npm run bench:callers -- [--orders 10000] [--inserts 1000] [--changes 50] [--waiters 1000]
 *                            [--seconds 20] [--rounds 3] [--tries 200]
 *
 * 1. Learning of a change: a caller holds `/orders?status=processing` with its tag and
 *    `Prefer: wait=60`; the benchmark publishes a new processing order of its organization, one
 *    every 300 ms, and times each from the call that publishes it to the 200 that shows it (an
 *    upper bound of the time from the replica applying it: the produce round trip, the broker's
 *    and the projector's share are in it). The caller sends again at once with the new tag:
 *    requests per change.
 * 2. Idle waiting requests: `--waiters` requests held (2 per key: many callers, each waiting on
 *    a page or two) with their current tag and `Prefer: wait=60`, counted by the replica's own
 *    gauge; the process's CPU over `--seconds` with them held and with none, in interleaved
 *    rounds. Cost: the difference.
 * 3. A cursor walk of `--orders` orders of one organization by the `next` links (100 a page) while
 *    `--inserts` are created among them (a tenth with the `created_at` of an existing order); the
 *    last page presents the built positions of the last inserts, so every insert was applied before
 *    it. Orders shown twice (any order), and misses of the orders that existed at the start. The
 *    same walk by `offset` over an organization of the same shape is the control.
 * 4. Built positions: `--tries` orders published one at a time; right after each acknowledgement,
 *    its articles asked with `X-Read-Position: topic=…;partition=…;offset=…` from the record's
 *    metadata. Held: a 200 for that order. The control asks without the header.
 *
 * Writes bench/results/callers-<UTC date-time>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Partitioners, type Admin, type Producer } from 'kafkajs';
import { API_PREFIX } from '../schemas/api.js';
import type { DomainEvent } from '../schemas/events.js';
import type { TopicRole } from '../schemas/streams.js';
import { sha256Hex } from '../src/http/bearer-key.js';
import { messageKeyOf, topicRoleOf } from '../src/kafka/publisher.js';
import { numericOptions, reportRun } from './cli.js';
import {
  benchBroker,
  benchKeyOf,
  createBenchTopics,
  kafkaOf,
  startServiceProcess,
  useBuiltService,
  waitUntil,
  type ServiceProcess,
} from './lib.js';
import { loadSampler } from './peers/proc.js';
import { cpuMsOf } from './run.js';
import type { Figure } from './run.js';

const usage =
  'usage: npm run bench:callers -- [--orders N] [--inserts N] [--changes N] [--waiters N] [--seconds N] [--rounds N] [--tries N]';
const options = numericOptions(
  { orders: 10_000, inserts: 1000, changes: 50, waiters: 1000, seconds: 20, rounds: 3, tries: 200 },
  usage,
);

const walked = 1; // walked by cursor
const control = 2; // walked by offset
const changing = 3; // the waiting caller's
const publishing = 4; // the publisher's
const firstWaiter = 11;
const perWaiterKey = 2;
const waiterKeys = Math.ceil(options.waiters / perWaiterKey);
// a held request lasts 60 s: the measured seconds and the set-up around them fit in it
if (options.seconds > 50) {
  console.error(`--seconds must be at most 50\n${usage}`);
  process.exit(2);
}
const base = Date.UTC(2026, 0, 1);
const minute = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((wake) => setTimeout(wake, ms));
const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
const quantile = (values: readonly number[], q: number): number =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))] ?? NaN;
const round1 = (value: number): number => Math.round(value * 10) / 10;

let nextEvent = 0;
function orderCreated(orderId: number, org: number, createdAt: number, status: string): DomainEvent {
  const at = new Date(createdAt).toISOString();
  nextEvent += 1;
  return {
    event_id: `callers-${nextEvent}`,
    type: 'order.created',
    occurred_at: at,
    data: {
      order_id: orderId,
      organization_id: org,
      member_id: 1,
      press_release_title: `Press release ${orderId}`,
      status,
      distribution_date: null,
      created_at: at,
    },
  };
}

function keyIssued(org: number): DomainEvent {
  nextEvent += 1;
  return {
    event_id: `callers-${nextEvent}`,
    type: 'api_key.issued',
    occurred_at: new Date(base).toISOString(),
    data: { key_id: `callers-${org}`, organization_id: org, key_sha256: sha256Hex(benchKeyOf(org)) },
  };
}

/**
 * Sends events in batches of 1 000 and waits for every acknowledgement; the built position of the
 * first record acknowledged (exact for a single event).
 */
async function send(
  producer: Producer,
  topics: Record<TopicRole, string>,
  events: readonly DomainEvent[],
): Promise<string> {
  let first = '';
  for (let i = 0; i < events.length; i += 1000) {
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const event of events.slice(i, i + 1000)) {
      const topic = topics[topicRoleOf(event)];
      const messages = byTopic.get(topic) ?? [];
      messages.push({ key: messageKeyOf(event), value: JSON.stringify(event) });
      byTopic.set(topic, messages);
    }
    const acks = await producer.sendBatch({
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    const ack = acks[0];
    if (first === '' && ack !== undefined)
      first = `topic=${ack.topicName};partition=${ack.partition};offset=${ack.baseOffset}`;
  }
  return first;
}

/** The built position of the last record of every partition of the orders topic. */
async function endOfOrders(admin: Admin, topic: string): Promise<string> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets
    .filter(({ high }) => Number(high) > 0)
    .map(({ partition, high }) => `topic=${topic};partition=${partition};offset=${Number(high) - 1}`)
    .join(',');
}

interface Answer {
  status: number;
  headers: Headers;
  body: unknown;
}

function getter(service: ServiceProcess) {
  return async (path: string, org: number, headers: Record<string, string> = {}, signal?: AbortSignal) => {
    const response = await fetch(
      `http://127.0.0.1:${service.httpPort}${path.startsWith('/api') ? '' : API_PREFIX}${path}`,
      {
        headers: { authorization: `Bearer ${benchKeyOf(org)}`, ...headers },
        ...(signal === undefined ? {} : { signal }),
      },
    );
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: text === '' ? null : (JSON.parse(text) as unknown),
    };
  };
}

async function heldRequests(service: ServiceProcess): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${service.adminPort}/metrics`)).text();
  return Number(/^orders_read_model_http_waiting_requests (\d+)/m.exec(text)?.[1] ?? NaN);
}

useBuiltService();
const started = new Date();
const load = loadSampler();
const broker = await benchBroker();
const kafka = kafkaOf(broker.brokers);
const topics = await createBenchTopics(kafka, `callers-${Date.now()}`);
const producer = kafka.producer({
  createPartitioner: Partitioners.DefaultPartitioner,
  allowAutoTopicCreation: false,
});
await producer.connect();
const admin = kafka.admin();
await admin.connect();
const dataDir = mkdtempSync(join(tmpdir(), 'callers-'));
let service: ServiceProcess | undefined;
try {
  // the data set: every organization's key, two organizations of `orders`, a few orders elsewhere
  const orgs = [
    walked,
    control,
    changing,
    publishing,
    ...Array.from({ length: waiterKeys }, (_, i) => firstWaiter + i),
  ];
  let id = 0;
  const setUp: DomainEvent[] = orgs.map(keyIssued);
  for (const org of [walked, control])
    for (let i = 0; i < options.orders; i++)
      setUp.push(orderCreated(++id, org, base + i * minute, 'finished'));
  for (const org of orgs.slice(2))
    for (let i = 0; i < 3; i++) setUp.push(orderCreated(++id, org, base + i * minute, 'publishing'));
  await send(producer, topics, setUp);
  const lastPosition = await endOfOrders(admin, topics.orders);
  service = await startServiceProcess(broker.brokers, topics, dataDir, { LOG_LEVEL: 'info' });
  const get = getter(service);
  await waitUntil(
    'the replica has applied the data set',
    async () => (await get('/orders?limit=1', walked, { 'x-read-position': lastPosition })).status === 200,
    120_000,
    200,
  );
  await sleep(5000); // the start's own work settles

  // 1. learning of a change
  let requests = 0;
  let notModified = 0;
  const sentAt: number[] = [];
  const seenAt: number[] = [];
  {
    const first = await get('/orders?status=processing&limit=100', changing);
    let tag = first.headers.get('etag') ?? '';
    const caller = (async () => {
      while (seenAt.length < options.changes) {
        const answer = await get('/orders?status=processing&limit=100', changing, {
          'if-none-match': tag,
          prefer: 'wait=60',
        });
        requests += 1;
        if (answer.status === 304) notModified += 1;
        else if (answer.status !== 200) throw new Error(`a waiting request got ${answer.status}`);
        else {
          const seen = performance.now();
          tag = answer.headers.get('etag') ?? '';
          // the page shows every order published so far, after the 3 of the start
          const shown = (answer.body as { total: number }).total - 3;
          while (seenAt.length < shown) seenAt.push(seen);
        }
      }
    })();
    for (let change = 0; change < options.changes; change++) {
      await sleep(300);
      sentAt.push(performance.now());
      await send(producer, topics, [
        orderCreated(++id, changing, base + (10 + change) * minute, 'publishing'),
      ]);
    }
    await caller;
  }
  const learnMs = seenAt.map((seen, change) => round1(seen - (sentAt[change] ?? NaN)));
  console.log(
    `1. learning of a change: median ${median(learnMs)} ms, p90 ${quantile(learnMs, 0.9)}; ${requests} requests for ${options.changes} changes`,
  );

  // 2. idle waiting requests
  const pid = service.child.pid ?? 0;
  const waiterTags = await Promise.all(
    Array.from(
      { length: waiterKeys },
      async (_, i) => (await get('/orders?limit=20', firstWaiter + i)).headers.get('etag') ?? '',
    ),
  );
  const idleRounds: number[] = [];
  const heldRounds: number[] = [];
  const measure = async (): Promise<number> => {
    const cpu = cpuMsOf(pid) ?? NaN;
    const t = performance.now();
    await sleep(options.seconds * 1000);
    return ((cpuMsOf(pid) ?? NaN) - cpu) / ((performance.now() - t) / 1000);
  };
  for (let round = 0; round < options.rounds; round++) {
    // the same pause as before a held round: what the last round let go has settled
    await sleep(2000);
    idleRounds.push(round1(await measure()));
    const abort = new AbortController();
    const held = Array.from({ length: options.waiters }, (_, i) =>
      get(
        '/orders?limit=20',
        firstWaiter + Math.floor(i / perWaiterKey),
        { 'if-none-match': waiterTags[Math.floor(i / perWaiterKey)] ?? '', prefer: 'wait=60' },
        abort.signal,
      ).catch(() => null),
    );
    let counted = 0;
    await waitUntil(
      `${options.waiters} requests held`,
      async () => (counted = await heldRequests(service!)) === options.waiters,
      30_000,
      100,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}: the replica counts ${counted} held`);
    });
    await sleep(2000);
    heldRounds.push(round1(await measure()));
    const stillHeld = await heldRequests(service);
    if (stillHeld !== options.waiters)
      throw new Error(`only ${stillHeld} of ${options.waiters} requests were held to the end`);
    abort.abort();
    await Promise.all(held);
    await waitUntil(
      'the held requests are let go',
      async () => (await heldRequests(service!)) === 0,
      30_000,
      100,
    );
    console.log(
      `2. round ${round + 1}: idle ${idleRounds[round]} ms/s, ${options.waiters} held ${heldRounds[round]} ms/s`,
    );
  }
  const waitingCost = heldRounds.map((held, i) => round1(held - (idleRounds[i] ?? NaN)));

  // 3. cursor walk, and the control by offset
  const walk = async (org: number, byCursor: boolean) => {
    const existing = new Set<number>();
    for (const event of setUp)
      if (event.type === 'order.created' && event.data.organization_id === org)
        existing.add(event.data.order_id);
    const inserts: DomainEvent[] = Array.from({ length: options.inserts }, (_, i) => {
      const at =
        i % 10 === 0
          ? base + Math.floor(Math.random() * options.orders) * minute
          : base + Math.random() * (options.orders + 100) * minute;
      return orderCreated(++id, org, Math.floor(at), 'finished');
    });
    const pages = Math.ceil(options.orders / 100);
    const perPage = Math.ceil(options.inserts / Math.max(1, pages - 5));
    const seen = new Map<number, number>();
    let path: string | undefined = `/orders?limit=100&status=all`;
    let offset = 0;
    let position = '';
    const totals: number[] = [];
    let page = 0;
    let final = '';
    while (path !== undefined) {
      const batch = inserts.slice(page * perPage, (page + 1) * perPage);
      if (batch.length > 0) {
        await send(producer, topics, batch);
        // once the last are sent, pages present them: every insert is applied before the walk ends
        if ((page + 1) * perPage >= options.inserts) final = await endOfOrders(admin, topics.orders);
      }
      const presented = final !== '' ? final : position;
      const answer: Answer = await get(path, org, presented === '' ? {} : { 'x-read-position': presented });
      if (answer.status !== 200)
        throw new Error(`page ${page}: ${answer.status} ${JSON.stringify(answer.body)}`);
      position = answer.headers.get('x-read-position') ?? position;
      const body = answer.body as { data: { id: number }[]; total: number };
      totals.push(body.total);
      for (const order of body.data) seen.set(order.id, (seen.get(order.id) ?? 0) + 1);
      if (byCursor) {
        const next = /<([^>]*)>; rel="next"/.exec(answer.headers.get('link') ?? '')?.[1];
        path = next;
      } else {
        offset += 100;
        path = offset < body.total ? `/orders?limit=100&status=all&offset=${offset}` : undefined;
      }
      page += 1;
    }
    const duplicates = [...seen.values()].filter((n) => n > 1).length;
    const misses = [...existing].filter((order) => !seen.has(order)).length;
    return { pages: page, duplicates, misses, firstTotal: totals[0] ?? 0, lastTotal: totals.at(-1) ?? 0 };
  };
  const cursorWalk = await walk(walked, true);
  const offsetWalk = await walk(control, false);
  console.log(`3. cursor walk: ${JSON.stringify(cursorWalk)}; by offset: ${JSON.stringify(offsetWalk)}`);

  // 4. built positions
  const own = { held: 0, waitMs: [] as number[], controlHeld: 0 };
  for (let i = 0; i < options.tries; i++) {
    const orderId = ++id;
    const built = await send(producer, topics, [
      orderCreated(orderId, publishing, base + (100 + i) * minute, 'finished'),
    ]);
    const withPosition = i % 2 === 0; // every other try is the control, without the header
    const t = performance.now();
    const answer = await get(
      `/orders/${orderId}/articles`,
      publishing,
      withPosition ? { 'x-read-position': built } : {},
    );
    const holds = answer.status === 200 && (answer.body as { order_id?: number }).order_id === orderId;
    if (withPosition) {
      own.held += holds ? 1 : 0;
      own.waitMs.push(round1(performance.now() - t));
    } else own.controlHeld += holds ? 1 : 0;
  }
  const asked = Math.ceil(options.tries / 2);
  const controls = options.tries - asked;
  console.log(`4. built positions: ${own.held} of ${asked} held; without: ${own.controlHeld} of ${controls}`);

  const figures: Figure[] = [
    {
      name: 'learning of a change: publish to 200, median',
      value: `${median(learnMs)} ms`,
      target: '≤ 100 ms after the replica applies it',
    },
    { name: 'learning of a change: p90', value: `${quantile(learnMs, 0.9)} ms` },
    { name: 'requests per change', value: `${round1(requests / options.changes)}`, target: '1' },
    {
      name: `${options.waiters} idle waiting requests: CPU, worst round`,
      value: `${Math.max(...waitingCost)} ms/s (${round1(Math.max(...waitingCost) / 10)} % of a core)`,
      baseline: `idle ${median(idleRounds)} ms/s`,
      target: '< 1 % of a core',
    },
    {
      name: 'cursor walk: duplicates, misses',
      value: `${cursorWalk.duplicates}, ${cursorWalk.misses}`,
      baseline: `by offset: ${offsetWalk.duplicates}, ${offsetWalk.misses}`,
      target: '0, 0',
    },
    {
      name: 'built positions held',
      value: `${own.held} of ${asked}`,
      baseline: `without the header: ${own.controlHeld} of ${controls}`,
      target: 'every one',
    },
  ];
  reportRun('callers', started, options, figures, {
    learning: { ms: learnMs, requests, notModified, changes: options.changes },
    waiting: { idleMsPerSecond: idleRounds, heldMsPerSecond: heldRounds, costMsPerSecond: waitingCost },
    cursorWalk,
    offsetWalk,
    loadAverage: load.summary(),
    builtPositions: { asked, held: own.held, waitMs: own.waitMs, controls, controlHeld: own.controlHeld },
  });
} finally {
  load.stop();
  await service?.stop();
  await producer.disconnect();
  await admin.disconnect();
  rmSync(dataDir, { recursive: true, force: true });
  await broker.close();
}

/**
 * Two callers of docs/api.md, from outside, through the balancer only: Debian's haproxy with the
 * deployment's configuration (deploy/haproxy/haproxy.cfg) in front of two service processes on a
 * real broker. About 20 s on an idle 2-core machine.
 *
 * 1. A caller walks the 1 000 orders of its organization by the `next` links of `Link`, sending
 *    back the newest `X-Read-Position`, while a publisher creates 200 more at random `created_at`
 *    inside and above the walked range. The balancer keeps a key on one replica (a consistent hash
 *    of `Authorization`), so the test stops that replica after the fourth page and, once the
 *    balancer has taken it out, starts it again: the walk moves to the other replica and back. It
 *    shows no order twice, misses none that existed when it began, lists newest first across pages,
 *    and its `total` never falls whichever replica answers.
 * 2. A publisher builds `X-Read-Position` from the partition and offset its kafkajs producer got
 *    back for each of 30 new orders: every answer, right after the acknowledgement, holds its order,
 *    from both replicas (two keys of the organization, one hashed to each). A built position naming
 *    the keys topic gets 400 `Invalid read position`.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import type { DomainEvent } from '../../schemas/events.js';
import type { TopicRole } from '../../schemas/streams.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { messageKeyOf } from '../../src/kafka/publisher.js';
import { seededRandom } from '../../tools/demo-data.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyIssued, orderCreated } from '../helpers/events.js';
import { startBalancerOf } from '../helpers/haproxy.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

const existing = 1000;
const inserted = 200;
const insertBatch = 5;
const limit = 50;
const builtTries = 30;
/** the first order's `created_at`; the existing orders are a minute apart from it */
const origin = Date.UTC(2026, 10, 1, 9, 0, 0);
/** the inserted orders' `created_at` are random in [origin, origin + span): inside the walked range and above it */
const span = (existing + existing / 5) * 60_000;
/** keys of organization 1 besides keyOf(1), for callers the balancer may hash to either replica */
const otherKeys = Array.from({ length: 8 }, (_, i) => `callers-balancer-key-${i}`);

const sleep = (ms: number) => new Promise((wake) => setTimeout(wake, ms));

interface Replica {
  name: string;
  httpPort: number;
  adminPort: number;
  env: NodeJS.ProcessEnv;
  process: ServiceProcess;
}

interface Page {
  total: number;
  limit: number;
  offset: number;
  data: { id: number; created_at: string }[];
}

describe('callers of docs/api.md behind HAProxy, two replicas', () => {
  const dir = tempDir('callers-balancer');
  let topics: Record<TopicRole, string>;
  let producer: Awaited<ReturnType<typeof connectedClients>>['producer'];
  let replicas: Replica[];
  let haproxy: ReturnType<typeof startBalancerOf>;
  /** set once beforeAll is through: else the helpers' own hooks kill what was started */
  let started = false;
  let base: string;
  /** the `created_at` (epoch ms) of every order the test created, by id */
  const createdAt = new Map<number, number>();

  const created = (id: number, ms: number, status: string): DomainEvent => {
    createdAt.set(id, ms);
    const text = new Date(ms).toISOString();
    return orderCreated(
      { order_id: id, organization_id: 1, status, created_at: text },
      { occurred_at: text },
    );
  };
  const ready = async (adminPort: number): Promise<boolean> =>
    (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null))?.status === 200;
  /** Whether a request with `key` (none: round robin) is answered by `replica` within a few tries. */
  const balancesTo = async (replica: string, key?: string): Promise<boolean> => {
    for (let i = 0; i < 4; i++) {
      const answer = await fetch(`${base}/orders?limit=1`, {
        headers: key === undefined ? {} : { authorization: `Bearer ${key}` },
      }).catch(() => null);
      await answer?.text();
      if (answer?.headers.get('x-replica') === replica) return true;
    }
    return false;
  };
  const replicaOf = (name: string): Replica => {
    const replica = replicas.find((r) => r.name === name);
    if (replica === undefined) throw new Error(`no replica ${name}`);
    return replica;
  };

  beforeAll(async () => {
    const clients = await connectedClients(testKafka());
    producer = clients.producer;
    topics = await createContractTopics(clients.admin);
    await publish(producer, topics, [
      issueKeyOf(1),
      ...otherKeys.map((key) => apiKeyIssued(key, 1, sha256Hex(key))),
      ...Array.from({ length: existing }, (_, i) =>
        created(i + 1, origin + i * 60_000, i % 3 === 0 ? 'finished' : 'publishing'),
      ),
    ]);
    replicas = await Promise.all(
      ['1', '2'].map(async (name) => {
        const httpPort = await freePort();
        const adminPort = await freePort();
        const env = {
          ...serviceEnv({
            topics,
            dataDir: join(dir, name),
            httpPort,
            adminPort,
            groupId: `callers-balancer-${name}`,
          }),
          // a loaded machine may take a while to apply a record: the answer waits rather than 503
          READ_POSITION_WAIT_MS: '10000',
        };
        return { name: `replica-${name}`, httpPort, adminPort, env, process: spawnService(env) };
      }),
    );
    const [one, two] = replicas as [Replica, Replica];
    await waitUntil(
      'both replicas are ready',
      async () => (await ready(one.adminPort)) && (await ready(two.adminPort)),
    ).catch(async (error: unknown) => {
      const why = await Promise.all(
        [one, two].map(async (r) => {
          const answer = await fetch(`http://127.0.0.1:${r.adminPort}/readyz`).catch(() => null);
          return `${r.name} /readyz ${answer?.status}: ${await answer?.text()}\n${r.process.output.slice(-30).join('\n')}`;
        }),
      );
      throw new Error(`${String(error)}\n${why.join('\n')}`);
    });
    const port = await freePort();
    haproxy = startBalancerOf(port, [one, two]);
    base = `http://127.0.0.1:${port}${API_PREFIX}`;
    await waitUntil(
      'the balancer sends requests to both',
      async () => (await balancesTo('replica-1')) && (await balancesTo('replica-2')),
    );
    started = true;
  });

  afterAll(async () => {
    if (!started) return;
    haproxy.child.kill('SIGTERM');
    for (const replica of replicas) replica.process.child.kill('SIGTERM');
    const codes = await Promise.all(replicas.map((replica) => replica.process.exited));
    expect(codes, 'the replicas stop cleanly').toEqual([0, 0]);
    expect(
      haproxy.output.filter((line) => /\[ALERT\]/.test(line)),
      haproxy.output.filter((line) => !line.includes('GET ')).join('\n'),
    ).toEqual([]);
  });

  it('walks every order by the next links while orders are created and the replica stops and comes back', async () => {
    const seed = Date.now() % 1_000_000;
    const next = seededRandom(seed);
    const key = keyOf(1);
    const failures: string[] = [];
    const counts = { requests: 0, waitedOut: 0 };
    let position: string | null = null;

    /** One page, as a caller gets it: retried on no answer or a 503 with Retry-After, a few times. */
    const get = async (url: string): Promise<{ page: Page; link: string; replica: string | null }> => {
      for (let attempt = 0; attempt < 10; attempt++) {
        const headers: Record<string, string> = { authorization: `Bearer ${key}` };
        if (position !== null) headers['x-read-position'] = position;
        counts.requests += 1;
        const response = await fetch(url, { headers }).catch((error: unknown) => error as Error);
        if (response instanceof Error) {
          failures.push(`${new Date().toISOString()} no answer: ${response.message}`);
          await sleep(200);
          continue;
        }
        if (response.status === 503 && response.headers.get('retry-after') !== null) {
          counts.waitedOut += 1;
          await response.text();
          await sleep(1000);
          continue;
        }
        if (response.status !== 200) {
          failures.push(
            `${new Date().toISOString()} ${response.status} ${(await response.text()).slice(0, 80)}`,
          );
          await sleep(200);
          continue;
        }
        position = response.headers.get('x-read-position') ?? position;
        return {
          page: (await response.json()) as Page,
          link: response.headers.get('link') ?? '',
          replica: response.headers.get('x-replica'),
        };
      }
      throw new Error(`no page for ${url}: ${failures.join('\n')}`);
    };

    const first = `${base}/orders?limit=${limit}&status=all`;
    await waitUntil('the first page counts every existing order', async () => {
      const answer = await fetch(first, { headers: { authorization: `Bearer ${key}` } });
      return ((await answer.json()) as Page).total === existing;
    });

    // The publisher creates orders in batches from the first page on; the walk never gets ahead of
    // it (page n + 1 waits for batch n), so the two overlap whatever the machine's speed.
    const progress = { batches: 0, done: false };
    const insertedIds: number[] = [];
    const publishing = async () => {
      for (let b = 0; b < inserted / insertBatch; b++) {
        const events = Array.from({ length: insertBatch }, () => {
          const id = 100_000 + insertedIds.length;
          insertedIds.push(id);
          return created(id, origin + Math.floor(next() * span), next() < 0.5 ? 'finished' : 'publishing');
        });
        await publish(producer, topics, events);
        progress.batches += 1;
        await sleep(120);
      }
      progress.done = true;
    };
    let publisher: Promise<void> | undefined;

    // The operator stops the replica that serves the walk after its fourth page and, once the
    // balancer has taken it out (its log says so: a request to it is sent to the other replica
    // either way), starts it again with its file, behind by what was published meanwhile. The
    // balancer takes it back after two passed checks of /readyz (a replica answers requests before
    // it is ready: waiting for its answers alone could see it before its first failed check).
    let operator: Promise<void> | undefined;
    const logged = (from: number, text: string) => () =>
      Promise.resolve(haproxy.output.slice(from).some((line) => line.includes(text)));
    const stopAndRestart = async (replica: Replica): Promise<void> => {
      const stoppedAt = haproxy.output.length;
      replica.process.child.kill('SIGTERM');
      expect(await replica.process.exited).toBe(0);
      await waitUntil(
        'the balancer takes the stopped replica out',
        logged(stoppedAt, `replicas/${replica.name} is DOWN`),
        30_000,
        50,
      );
      const startedAt = haproxy.output.length;
      replica.process = spawnService(replica.env);
      await waitUntil(
        'the balancer takes the restarted replica back',
        logged(startedAt, `replicas/${replica.name} is UP`),
        30_000,
        50,
      );
    };

    const seen: number[] = [];
    const servedBy: (string | null)[] = [];
    const totals: number[] = [];
    /** each page's envelope: its size, its limit and offset as echoed */
    const envelopes: { size: number; limit: number; offset: number }[] = [];
    let url: string | null = first;
    let pages = 0;
    while (url !== null) {
      while (!progress.done && progress.batches < pages) await sleep(10);
      const { page, link, replica } = await get(url);
      pages += 1;
      servedBy.push(replica);
      totals.push(page.total);
      envelopes.push({ size: page.data.length, limit: page.limit, offset: page.offset });
      seen.push(...page.data.map((order) => order.id));
      if (pages === 1) publisher = publishing();
      if (pages === 4) operator = stopAndRestart(replicaOf(replica ?? ''));
      // halfway, the walk waits for the restarted replica, so its last pages are that replica's again
      if (pages === 12) await operator;
      const target = /<([^>]+)>; rel="next"/.exec(link)?.[1];
      url = target === undefined ? null : new URL(target, base).href;
      await sleep(150);
    }
    await publisher;
    await operator;

    const runs = servedBy.reduce<string[]>(
      (acc, name) => (acc.at(-1) === name ? acc : [...acc, String(name)]),
      [],
    );
    const twice = seen.filter((id, i) => seen.indexOf(id) !== i);
    const shown = new Set(seen);
    const missed = Array.from({ length: existing }, (_, i) => i + 1).filter((id) => !shown.has(id));
    const insertedShown = insertedIds.filter((id) => shown.has(id)).length;
    console.log(
      `callers-balancer walk (seed ${seed}): ${pages} pages, ${seen.length} orders shown (${insertedShown} of ${inserted} created during the walk), totals ${totals[0]} -> ${totals.at(-1)}, served by ${runs.join(' -> ')}, ${counts.requests} requests, ${counts.waitedOut} 503 while a replica caught up`,
    );

    expect(failures, `requests not answered; the balancer's log:\n${haproxy.output.join('\n')}`).toEqual([]);
    expect(twice, 'orders shown twice').toEqual([]);
    expect(missed, 'orders that existed when the walk began, not shown').toEqual([]);
    expect(
      seen.filter((id) => !createdAt.has(id)),
      'orders shown that the test did not create',
    ).toEqual([]);
    // newest first: created_at descending, ties by id descending, across every page
    const outOfOrder = seen.filter((id, i) => {
      if (i === 0) return false;
      const before = seen[i - 1] ?? 0;
      const [a, b] = [createdAt.get(before) ?? 0, createdAt.get(id) ?? 0];
      return !(a > b || (a === b && before > id));
    });
    expect(outOfOrder, 'orders out of the listing order').toEqual([]);
    // every page is full but the last (none empty), and a cursor page's offset is 0
    expect(envelopes.slice(0, -1)).toEqual(Array(pages - 1).fill({ size: limit, limit, offset: 0 }));
    expect(envelopes.at(-1)).toMatchObject({ limit, offset: 0 });
    expect(envelopes.at(-1)?.size).toBeGreaterThan(0);
    expect(totals[0]).toBe(existing);
    // never older, whichever replica answered: the count of orders only grows during the walk
    expect(
      totals.filter((total, i) => i > 0 && total < (totals[i - 1] ?? 0)),
      `totals fell: ${totals.join(' ')}`,
    ).toEqual([]);
    expect(totals.at(-1), 'orders were created and applied during the walk').toBeGreaterThan(existing);
    // the key stays on one replica while it is ready; stopped, the other serves; back, it does again
    expect(runs, 'the walk moved to the other replica and back').toHaveLength(3);
    expect(runs[0]).toBe(runs[2]);
    expect([...new Set(runs)].sort()).toEqual(['replica-1', 'replica-2']);
  });

  it('answers, right after the acknowledgement, with the order a publisher names by a built position, on both replicas', async () => {
    await waitUntil(
      'the balancer sends requests to both',
      async () => (await balancesTo('replica-1')) && (await balancesTo('replica-2')),
    );
    // a key that the balancer hashes to each replica (its choice by key does not change while both are up)
    const keyTo = new Map<string, string>();
    for (const key of otherKeys) {
      const answer = await fetch(`${base}/orders?limit=1`, { headers: { authorization: `Bearer ${key}` } });
      expect(answer.status).toBe(200);
      await answer.text();
      const replica = answer.headers.get('x-replica');
      if (replica !== null && !keyTo.has(replica)) keyTo.set(replica, key);
    }
    expect([...keyTo.keys()].sort(), 'the keys are hashed to both replicas').toEqual([
      'replica-1',
      'replica-2',
    ]);
    const callers = [...keyTo.values()];

    const outcomes: string[] = [];
    const servedBy = new Set<string>();
    for (let i = 0; i < builtTries; i++) {
      const orderId = 9_000_000 + i;
      const event = created(orderId, Date.UTC(2100, 0, 1) + i * 1000, 'finished');
      const [record] = await producer.send({
        topic: topics.orders,
        acks: -1,
        messages: [{ key: messageKeyOf(event), value: JSON.stringify(event) }],
      });
      if (record === undefined) throw new Error('the producer acknowledged no record');
      const position = `topic=${topics.orders};partition=${record.partition};offset=${record.baseOffset}`;
      const key = callers[i % callers.length] ?? '';
      const answer = await fetch(`${base}/orders/${orderId}/articles`, {
        headers: { authorization: `Bearer ${key}`, 'x-read-position': position },
      });
      const body = (await answer.json()) as { order_id?: number };
      const replica = answer.headers.get('x-replica') ?? 'none';
      servedBy.add(replica);
      outcomes.push(
        answer.status === 200 && body.order_id === orderId
          ? 'held'
          : `${position} from ${replica}: ${answer.status} ${JSON.stringify(body)}`,
      );
    }
    expect(outcomes).toEqual(Array<string>(builtTries).fill('held'));
    expect([...servedBy].sort()).toEqual(['replica-1', 'replica-2']);

    for (const key of callers) {
      const answer = await fetch(`${base}/orders/9000000/articles`, {
        headers: {
          authorization: `Bearer ${key}`,
          'x-read-position': `topic=${topics.apiKeys};partition=0;offset=0`,
        },
      });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toMatchObject({ error: 'Invalid read position' });
    }
  });
});

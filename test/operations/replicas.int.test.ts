/**
 * Two replicas on the same topics, from outside (service processes, real Kafka): a tag one gives
 * earns a 304 from the other for every unchanged page, and a replica held behind answers a request
 * presenting a newer position only once it has reached it (or 503 with Retry-After), never with an
 * older page.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { articlePublished, at, orderCreated, statusChanged } from '../helpers/events.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

interface Replica {
  httpPort: number;
  adminPort: number;
  env: NodeJS.ProcessEnv;
  process: ServiceProcess;
}

interface Answer {
  status: number;
  etag: string | null;
  position: string | null;
  retryAfter: string | null;
  body: { total?: number; data?: { id: number; order_status?: string }[]; error?: string } | null;
}

async function get(replica: Replica, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`http://127.0.0.1:${replica.httpPort}${API_PREFIX}${path}`, {
    headers: { authorization: `Bearer ${keyOf(1)}`, ...headers },
  });
  const text = await response.text();
  return {
    status: response.status,
    etag: response.headers.get('etag'),
    position: response.headers.get('x-read-position'),
    retryAfter: response.headers.get('retry-after'),
    body: text === '' ? null : (JSON.parse(text) as Answer['body']),
  };
}

const ready = async (replica: Replica): Promise<boolean> =>
  (await fetch(`http://127.0.0.1:${replica.adminPort}/readyz`).catch(() => null))?.status === 200;

const pages = [
  '/orders',
  '/orders?limit=3',
  '/orders?limit=3&offset=3',
  '/orders?status=finished',
  '/orders?status=processing&limit=2',
  '/orders/2/articles',
  '/orders/3/articles',
];

describe('two replicas on the same topics', () => {
  const dir = tempDir('replicas');

  it('give the same tags for the same data, and a replica behind never answers a newer position with an older page', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [
      issueKeyOf(1),
      ...Array.from({ length: 12 }, (_, i) => orderCreated({ order_id: i + 1 }, { occurred_at: at(i) })),
      ...Array.from({ length: 4 }, (_, i) =>
        articlePublished({ article_id: i + 1, order_id: 2 + (i % 2) }, { occurred_at: at(20 + i) }),
      ),
      statusChanged(4, 'finished', { occurred_at: at(30) }),
    ]);
    const start = async (name: string, extra: NodeJS.ProcessEnv = {}): Promise<Replica> => {
      const httpPort = await freePort();
      const adminPort = await freePort();
      const env = {
        ...serviceEnv({ topics, dataDir: join(dir, name), httpPort, adminPort, groupId: `replicas-${name}` }),
        ...extra,
      };
      return { httpPort, adminPort, env, process: spawnService(env) };
    };
    // The second answers from two request threads: each must see positions and give the same tags.
    const a = await start('a');
    const b = await start('b', { HTTP_WORKERS: '2' });
    const total = async (replica: Replica): Promise<number | undefined> =>
      (await get(replica, '/orders').catch(() => null))?.body?.total;
    for (const replica of [a, b]) {
      await waitUntil(
        'the replica is ready with every order',
        async () => (await ready(replica)) && (await total(replica)) === 12,
      );
    }
    await waitUntil('both replicas report the same position', async () => {
      const [fromA, fromB] = [await get(a, '/orders'), await get(b, '/orders')];
      return fromA.position !== null && fromA.position === fromB.position;
    });

    // Cross-replica revalidation: every unchanged page, both ways.
    let revalidations = 0;
    let notModified = 0;
    for (const page of pages) {
      for (const [from, to] of [
        [a, b],
        [b, a],
      ] as const) {
        const first = await get(from, page);
        expect(first.status, page).toBe(200);
        expect(first.etag).not.toBeNull();
        const again = await get(to, page, { 'if-none-match': first.etag ?? '' });
        revalidations += 1;
        if (again.status === 304) notModified += 1;
        expect(again.status, `${page}: a tag of one replica revalidated on the other`).toBe(304);
        expect(again.etag).toBe(first.etag);
        expect(again.position).toBe(first.position);
      }
    }
    console.log(`cross-replica revalidations answered 304: ${notModified} of ${revalidations}`);

    // B stops; A applies more; B restarts late (its consumer takes seconds to join) with a short wait.
    b.process.child.kill('SIGTERM');
    expect(await b.process.exited).toBe(0);
    await publish(producer, topics, [
      statusChanged(1, 'finished', { occurred_at: at(40) }),
      orderCreated({ order_id: 13 }, { occurred_at: at(41) }),
    ]);
    // two topics: A may apply the orders topic's event before the status topic's
    await waitUntil(
      'A lists order 13 and order 1 finished',
      async () => (await total(a)) === 13 && (await get(a, '/orders?status=finished')).body?.total === 2,
    );
    const seen = await get(a, '/orders?status=finished');
    expect(seen.body?.total).toBe(2);
    const token = seen.position ?? '';
    const late: Replica = { ...b, env: { ...b.env, READ_POSITION_WAIT_MS: '200' } };
    late.process = spawnService(late.env);
    await waitUntil('B answers again', async () => (await total(late)) !== undefined, 30_000, 20);
    // Held behind: without the header it answers what it has, which is older…
    const unconditioned = await get(late, '/orders?status=finished');
    expect(unconditioned.body?.total, 'B restarted behind A').toBe(1);
    // …and with A's position it waits, then says it has not reached it, never answering the older page.
    const started = Date.now();
    const refused = await get(late, '/orders?status=finished', { 'x-read-position': token });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(refused.status).toBe(503);
    expect(refused.retryAfter).toBe('1');
    expect(refused.body?.error).toBe('Position not reached');
    let refusals = 1;
    let answer = refused;
    while (answer.status !== 200) {
      answer = await get(late, '/orders?status=finished', { 'x-read-position': token });
      if (answer.status === 503) refusals += 1;
      else expect(answer.status).toBe(200);
    }
    expect(answer.body?.total).toBe(2);
    console.log(`B answered A's position after ${refusals} 503s and ${Date.now() - started} ms`);

    // Caught up and consuming: a position A has just reached is waited for, then answered.
    await publish(producer, topics, [statusChanged(5, 'finished', { occurred_at: at(50) })]);
    await waitUntil(
      'A shows order 5 finished',
      async () => (await get(a, '/orders?status=finished')).body?.total === 3,
      30_000,
      5,
    );
    const newest = await get(a, '/orders?status=finished');
    const fresh = await get(late, '/orders?status=finished', { 'x-read-position': newest.position ?? '' });
    expect(fresh.status).toBe(200);
    expect(fresh.body?.total).toBe(3);
    expect(fresh.etag).toBe(newest.etag);

    for (const replica of [a, late]) {
      replica.process.child.kill('SIGTERM');
      expect(await replica.process.exited).toBe(0);
    }
  });
});

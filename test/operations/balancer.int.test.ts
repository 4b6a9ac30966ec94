/**
 * The balancer of docker-compose.yml (deploy/haproxy/haproxy.cfg), run with Debian's haproxy in
 * front of two service processes on a real broker: a poller that sends back its tag and the newest
 * position it has seen is moved between replicas as they stop and come back (behind), and never
 * sees a total fall, an order vanish or a status go back.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { startBalancerOf } from '../helpers/haproxy.js';
import { at, orderCreated, statusChanged } from '../helpers/events.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

interface Poll {
  status: number;
  replica: string | null;
  tag: string | null;
  position: string | null;
  page: { total: number; data: { id: number; order_status: string }[] } | null;
}

const orders = 40;

describe('HAProxy in front of two replicas (deploy/haproxy/haproxy.cfg)', () => {
  const dir = tempDir('balancer');

  it('keeps a poller that sends back its position from ever seeing older data while replicas stop and come back', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [
      issueKeyOf(1),
      ...Array.from({ length: 10 }, (_, i) => orderCreated({ order_id: i + 1 }, { occurred_at: at(i) })),
    ]);
    const replicas = await Promise.all(
      ['1', '2'].map(async (name) => {
        const httpPort = await freePort();
        const adminPort = await freePort();
        const env = serviceEnv({
          topics,
          dataDir: join(dir, name),
          httpPort,
          adminPort,
          groupId: `balancer-${name}`,
        });
        return { name, httpPort, adminPort, env, process: spawnService(env) };
      }),
    );
    const [one, two] = replicas as [(typeof replicas)[0], (typeof replicas)[0]];
    const ready = async (adminPort: number): Promise<boolean> =>
      (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null))?.status === 200;
    await waitUntil(
      'both replicas are ready',
      async () => (await ready(one.adminPort)) && (await ready(two.adminPort)),
    );
    // Started once both are ready: it must never find both down (the test stops one at a time).
    const port = await freePort();
    const haproxy = startBalancerOf(port, [one, two]);

    const balancesTo = async (replica: string): Promise<boolean> => {
      for (let i = 0; i < 4; i++) {
        const answer = await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders`).catch(() => null);
        await answer?.text();
        if (answer?.headers.get('x-replica') === replica) return true;
      }
      return false;
    };
    await waitUntil(
      'the balancer sends requests to both',
      async () => (await balancesTo('replica-1')) && (await balancesTo('replica-2')),
    );

    let tag: string | null = null;
    let position: string | null = null;
    let last: Poll['page'] = null;
    const seenStatus = new Map<number, string>();
    const servedBy = new Set<string>();
    const counts = { polls: 0, notModified: 0, waitedOut: 0, failed: 0 };
    const violations: string[] = [];
    const failures: string[] = [];
    const poll = async (): Promise<void> => {
      const headers: Record<string, string> = { authorization: `Bearer ${keyOf(1)}` };
      if (tag !== null) headers['if-none-match'] = tag;
      if (position !== null) headers['x-read-position'] = position;
      const response = await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders?limit=100`, {
        headers,
      }).catch(() => null);
      counts.polls += 1;
      if (response === null || response.status >= 500) {
        const text = (await response?.text()) ?? '';
        if (response?.status === 503 && response.headers.get('retry-after') !== null) counts.waitedOut += 1;
        else {
          counts.failed += 1;
          failures.push(
            `${new Date().toISOString()} ${response === null ? 'no answer' : `${response.status} ${text.slice(0, 60)}`}`,
          );
        }
        return;
      }
      const replica = response.headers.get('x-replica');
      if (replica !== null) servedBy.add(replica);
      position = response.headers.get('x-read-position') ?? position;
      if (response.status === 304) {
        counts.notModified += 1;
        return;
      }
      expect(response.status).toBe(200);
      const page = (await response.json()) as NonNullable<Poll['page']>;
      tag = response.headers.get('etag');
      if (last !== null && page.total < last.total)
        violations.push(`total fell ${last.total} -> ${page.total}`);
      const ids = new Set(page.data.map((order) => order.id));
      for (const id of seenStatus.keys()) if (!ids.has(id)) violations.push(`order ${id} vanished`);
      for (const order of page.data) {
        if (seenStatus.get(order.id) === 'finished' && order.order_status !== 'finished') {
          violations.push(`order ${order.id} went back to ${order.order_status}`);
        }
        seenStatus.set(order.id, order.order_status);
      }
      last = page;
    };

    // Events arrive while the poller polls; meanwhile replica 1 stops, comes back behind (ready at
    // once: it lags by less than READY_MAX_LAG), then replica 2 stops.
    const events = { publishing: true };
    const publisher = (async () => {
      for (let i = 11; i <= orders; i++) {
        await publish(producer, topics, [
          orderCreated({ order_id: i }, { occurred_at: at(i) }),
          statusChanged(i - 5, 'finished', { occurred_at: at(100 + i) }),
        ]);
        await new Promise((wake) => setTimeout(wake, 400));
      }
      events.publishing = false;
    })();
    const operator = (async () => {
      await new Promise((wake) => setTimeout(wake, 3000));
      one.process.child.kill('SIGTERM');
      await one.process.exited;
      await new Promise((wake) => setTimeout(wake, 3000));
      one.process = spawnService(one.env);
      // The balancer takes it back after two passed checks: requests without a key go round robin.
      await waitUntil(
        'the balancer sends requests to replica 1 again',
        () => balancesTo('replica-1'),
        30_000,
        100,
      );
      two.process.child.kill('SIGTERM');
      await two.process.exited;
    })();
    while (events.publishing) {
      await poll();
      await new Promise((wake) => setTimeout(wake, 20));
    }
    await Promise.all([publisher, operator]);
    await waitUntil(
      'the poller sees every order',
      async () => {
        await poll();
        return last?.total === orders;
      },
      30_000,
      50,
    );
    console.log(
      `balancer: ${counts.polls} polls, ${counts.notModified} answered 304, ${counts.waitedOut} 503 while a replica caught up, ${counts.failed} failed; served by ${[...servedBy].join(', ')}`,
    );
    expect(violations).toEqual([]);
    expect([...servedBy].sort(), 'the poller was moved between the replicas').toEqual([
      'replica-1',
      'replica-2',
    ]);
    expect(
      failures,
      `requests the balancer could not answer; its log:\n${haproxy.output.join('\n')}`,
    ).toEqual([]);
    expect(last).toMatchObject({ total: orders });

    haproxy.child.kill('SIGTERM');
    expect(
      haproxy.output.filter((line) => /\[ALERT\]/.test(line)),
      haproxy.output.filter((line) => !line.includes('GET ')).join('\n'),
    ).toEqual([]);
    one.process.child.kill('SIGTERM');
    expect(await one.process.exited).toBe(0);
  });
});

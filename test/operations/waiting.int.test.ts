/**
 * Waiting requests (`Prefer: wait=N`) from outside: the built service with two request threads on
 * a real broker, behind the deployment's HAProxy configuration. Requests held on every thread are
 * answered 200 when an event published to the topics changes their page, each with the new tag;
 * the per-key bound holds over both threads; one whose page does not change gets 304 at the end
 * of its wait, through the balancer.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated, statusChanged } from '../helpers/events.js';
import { startHaproxy } from '../helpers/haproxy.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

describe('waiting requests behind HAProxy, two request threads', () => {
  const dir = tempDir('waiting');

  it('answers every held request with the change, keeps the per-key bound over threads, and 304 at the end', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [
      issueKeyOf(1),
      issueKeyOf(2),
      orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(1) }),
      orderCreated({ order_id: 2, organization_id: 2 }, { occurred_at: at(2) }),
    ]);
    const httpPort = await freePort();
    const adminPort = await freePort();
    const env = {
      ...serviceEnv({ topics, dataDir: join(dir, 'replica'), httpPort, adminPort, groupId: 'waiting' }),
      HTTP_WORKERS: '2',
      WAIT_MAX_PER_KEY: '6',
    };
    const service = spawnService(env);
    await waitUntil(
      'the replica is ready with both orders',
      async () => (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null))?.status === 200,
    );
    const port = await freePort();
    const haproxy = startHaproxy({
      BALANCER_BIND: `127.0.0.1:${port}`,
      REPLICA_1: `127.0.0.1:${httpPort}`,
      REPLICA_1_ADMIN: String(adminPort),
      REPLICA_2: `127.0.0.1:${httpPort}`,
      REPLICA_2_ADMIN: String(adminPort),
    });
    const base = `http://127.0.0.1:${port}${API_PREFIX}`;
    const get = async (org: number, headers: Record<string, string> = {}) => {
      const started = performance.now();
      const response = await fetch(`${base}/orders`, {
        headers: { authorization: `Bearer ${keyOf(org)}`, connection: 'close', ...headers },
      });
      const text = await response.text();
      return {
        status: response.status,
        tag: response.headers.get('etag'),
        applied: response.headers.get('preference-applied'),
        body: text === '' ? null : (JSON.parse(text) as { data: { order_status: string }[] }),
        endedAt: performance.now(),
        ms: performance.now() - started,
      };
    };
    await waitUntil('the balancer answers', async () => (await get(1).catch(() => null))?.status === 200);
    const tag1 = (await get(1)).tag ?? '';
    const tag2 = (await get(2)).tag ?? '';

    // Eight requests of one key on connections of their own (SO_REUSEPORT spreads them over both
    // threads): six are held, two are answered at once, as the bound is counted over the threads.
    const held = Array.from({ length: 8 }, () => get(1, { 'if-none-match': tag1, prefer: 'wait=20' }));
    const unchanged = get(2, { 'if-none-match': tag2, prefer: 'wait=3' });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const publishedAt = performance.now();
    await publish(producer, topics, [statusChanged(1, 'finished', { occurred_at: at(3) })]);
    const answers = await Promise.all(held);
    const applied = answers.filter((answer) => answer.applied === 'wait=20');
    expect(applied, haproxy.output.join('\n')).toHaveLength(6);
    for (const answer of applied) {
      expect(answer.status).toBe(200);
      expect(answer.tag).not.toBe(tag1);
      expect(answer.body?.data[0]?.order_status).toBe('finished');
      // learned of the change soon after it was published, far before the end of the wait
      expect(answer.endedAt - publishedAt).toBeLessThan(5000);
    }
    for (const answer of answers.filter((a) => a.applied === null)) {
      expect(answer.status).toBe(304);
      expect(answer.ms).toBeLessThan(1000);
    }
    const other = await unchanged;
    expect(other.status).toBe(304);
    expect(other.applied).toBe('wait=3');
    expect(other.ms).toBeGreaterThanOrEqual(2900);
    console.log(
      `waiting: ${applied.length} held answered ${applied.map((a) => Math.round(a.endedAt - publishedAt)).join(', ')} ms after the publish`,
    );
    service.child.kill('SIGTERM');
  });
});

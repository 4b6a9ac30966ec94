import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../../tools/local-kafka.js';
import { API_PREFIX } from '../../schemas/api.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import {
  apiKeyIssued,
  apiKeyRevoked,
  articlePublished,
  at,
  orderCreated,
  orderDeleted,
  statusChanged,
} from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';

describe('the service as a process (npm start)', () => {
  const dir = tempDir('service-e2e');

  it('serves what is produced to the topics, within a bounded wait, and stops cleanly on SIGTERM', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const port = await freePort();
    const service = spawnService(
      serviceEnv({
        topics,
        dataDir: join(dir, 'data'),
        httpPort: port,
        groupId: uniqueTopicName('e2e'),
      }),
    );
    const rawKey = 'e2e-raw-key-5f1c9a';
    const get = async (path: string): Promise<{ status: number; body: unknown }> => {
      const response = await fetch(`http://127.0.0.1:${port}${API_PREFIX}${path}`, {
        headers: { authorization: `Bearer ${rawKey}` },
      });
      return { status: response.status, body: await response.json() };
    };
    const eventually = async (
      what: string,
      check: (r: { status: number; body: unknown }) => boolean,
      path: string,
    ) => waitUntil(what, async () => check(await get(path).catch(() => ({ status: 0, body: null }))), 30_000);

    await eventually('the API answers', (r) => r.status === 401, '/orders');

    await publish(producer, topics, [apiKeyIssued('e2e-key', 42, sha256Hex(rawKey), { occurred_at: at(0) })]);
    await eventually('the key is accepted', (r) => r.status === 200, '/orders');

    await publish(producer, topics, [
      orderCreated({ order_id: 1, organization_id: 42, created_at: at(1) }, { occurred_at: at(1) }),
      orderCreated({ order_id: 2, organization_id: 42, created_at: at(2) }, { occurred_at: at(2) }),
      orderCreated({ order_id: 3, organization_id: 7, created_at: at(3) }, { occurred_at: at(3) }),
      articlePublished(
        { article_id: 9, order_id: 1, article_url: 'https://www.wire.example/9' },
        { occurred_at: at(4) },
      ),
    ]);
    await eventually('two orders are listed', (r) => (r.body as { total: number }).total === 2, '/orders');

    // Polling through the running service: the tag holds while nothing changes, and the first poll
    // after a change of the organization's orders gets 200 (the service remembers digests until
    // another batch is committed to the file).
    const poll = (tag: string): Promise<Response> =>
      fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders`, {
        headers: { authorization: `Bearer ${rawKey}`, 'if-none-match': tag },
      });
    const tag = (
      await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders`, {
        headers: { authorization: `Bearer ${rawKey}` },
      })
    ).headers.get('etag')!;
    expect((await poll(tag)).status).toBe(304);
    expect((await poll(tag)).status).toBe(304);
    // A change of another organization, seen applied through that organization's own key, keeps
    // organization 42's tag.
    const otherKey = 'e2e-raw-key-other-7';
    await publish(producer, topics, [
      apiKeyIssued('e2e-key-7', 7, sha256Hex(otherKey), { occurred_at: at(4) }),
      statusChanged(3, 'finished', { occurred_at: at(4) }),
    ]);
    await waitUntil(
      'organization 7 sees its order 3 finished',
      async () => {
        const answer = await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders?status=finished`, {
          headers: { authorization: `Bearer ${otherKey}` },
        }).catch(() => null);
        return answer?.status === 200 && JSON.stringify(await answer.json()).includes('"id":3');
      },
      30_000,
    );
    expect((await poll(tag)).status).toBe(304);
    // Paging links of the running service: the first of two pages, then the last.
    const linksOf = async (offset: number): Promise<string | null> =>
      (
        await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders?limit=1&offset=${offset}`, {
          headers: { authorization: `Bearer ${rawKey}` },
        })
      ).headers.get('link');
    const path = `${API_PREFIX}/orders`;
    // `next` names the last order shown by a cursor; following it gives the page that offset 1 gives
    const first = (await linksOf(0)) ?? '';
    const next = /<([^>]*&cursor=[A-Za-z0-9_-]+)>; rel="next"/.exec(first)?.[1];
    expect(first).toBe(
      `<${path}?limit=1&offset=0&status=all>; rel="first", <${next ?? 'no cursor'}>; rel="next", <${path}?limit=1&offset=1&status=all>; rel="last"`,
    );
    const pageAt = async (url: string): Promise<unknown> =>
      (
        (await (
          await fetch(`http://127.0.0.1:${port}${url}`, { headers: { authorization: `Bearer ${rawKey}` } })
        ).json()) as { data: unknown }
      ).data;
    expect(await pageAt(next ?? '')).toEqual(await pageAt(`${path}?limit=1&offset=1`));
    expect(await linksOf(1)).toBe(
      `<${path}?limit=1&offset=0&status=all>; rel="first", <${path}?limit=1&offset=0&status=all>; rel="prev", <${path}?limit=1&offset=1&status=all>; rel="last"`,
    );
    await publish(producer, topics, [statusChanged(2, 'finished', { occurred_at: at(5) })]);
    await waitUntil('a poll with the old tag gets 200', async () => (await poll(tag)).status === 200, 30_000);
    await eventually(
      'the finished filter sees order 2',
      (r) => JSON.stringify(r.body).includes('"id":2'),
      '/orders?status=finished',
    );
    expect((await get('/orders/1/articles')).body).toMatchObject({
      order_id: 1,
      data: [{ id: 9, website_domain: 'wire.example' }],
    });
    expect((await get('/orders/3/articles')).status).toBe(404);

    await publish(producer, topics, [orderDeleted(1, { occurred_at: at(6) })]);
    await eventually('order 1 is gone', (r) => r.status === 404, '/orders/1/articles');

    await publish(producer, topics, [apiKeyRevoked('e2e-key', { occurred_at: at(7) })]);
    await eventually('the revoked key is refused', (r) => r.status === 401, '/orders');

    // The projector thread runs at nice 5 (src/projector/projector-worker.ts), the thread answering requests at 0.
    const pid = service.child.pid!;
    const niceOf = (tid: string): number => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    // Threads have nice values of their own on Linux only; elsewhere the service keeps one priority.
    if (process.platform === 'linux') {
      const nices = readdirSync(`/proc/${pid}/task`).map((tid) => ({ tid, nice: niceOf(tid) }));
      expect(nices.find((t) => t.tid === String(pid))?.nice).toBe(0);
      expect(nices.filter((t) => t.nice === 5)).toHaveLength(1);
    }

    service.child.kill('SIGTERM');
    const started = Date.now();
    expect(await service.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(service.output.join('\n')).not.toContain(rawKey);
  });
});

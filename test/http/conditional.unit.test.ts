import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { issueKeyOf, keyOf, startTestApi } from '../helpers/api.js';
import { articlePublished, at, orderCreated, orderUpdated, statusChanged } from '../helpers/events.js';
import { historyArbitrary } from '../helpers/histories.js';
import { encodeCursor } from '../../src/http/cursor.js';

const key = keyOf(1);
const orders = (from: number, count: number, org = 1): DomainEvent[] =>
  Array.from({ length: count }, (_, i) =>
    orderCreated(
      { order_id: from + i, organization_id: org, status: 'finished' },
      { occurred_at: at(from + i) },
    ),
  );

describe('conditional requests and paging links', () => {
  it('sends a weak ETag and Cache-Control, and answers 304 with no body to a matching If-None-Match', async () => {
    const api = await startTestApi([issueKeyOf(1), ...orders(1, 3)]);
    const first = await api.get('/orders', key);
    const tag = first.headers.get('etag')!;
    expect(tag).toMatch(/^W\/".+"$/);
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    for (const ifNoneMatch of [tag, tag.slice(2), `"other", ${tag}`, '*']) {
      const again = await api.get('/orders', key, { 'if-none-match': ifNoneMatch });
      expect(again.status).toBe(304);
      expect(again.body).toBeNull();
      // No Content-Length or Content-Type: a client that trusts Content-Length would wait for a body.
      expect(again.headers.get('content-length')).toBeNull();
      expect(again.headers.get('content-type')).toBeNull();
      expect(again.headers.get('etag')).toBe(tag);
    }
    expect((await api.get('/orders', key, { 'if-none-match': 'W/"other"' })).status).toBe(200);
    // The tag covers the query.
    expect((await api.get('/orders?limit=2', key)).headers.get('etag')).not.toBe(tag);
    expect((await api.get('/orders?status=finished', key)).headers.get('etag')).not.toBe(tag);
  });

  it('documents in OpenAPI the If-None-Match and X-Read-Position it reads and the ETag, Cache-Control, Link and X-Read-Position it sends on 200 and 304', async () => {
    const api = await startTestApi([
      issueKeyOf(1),
      ...orders(1, 3),
      articlePublished({ article_id: 1, order_id: 1 }),
    ]);
    const documented = (await api.get('/openapi.json')).body as {
      paths: Record<
        string,
        {
          get: {
            parameters: { in: string; name: string }[];
            responses: Record<string, { headers?: Record<string, unknown> }>;
          };
        }
      >;
    };
    const sent = ['etag', 'cache-control', 'link', 'vary', 'x-read-position', 'x-request-id'];
    for (const [path, route] of [
      ['/orders?limit=1&offset=1', '/orders'],
      ['/orders/1/articles', '/orders/{id}/articles'],
    ] as const) {
      const operation = documented.paths[route]!.get;
      expect(
        operation.parameters.filter(
          (p) => p.in === 'header' && (p.name === 'If-None-Match' || p.name === 'X-Read-Position'),
        ),
      ).toHaveLength(2);
      const ok = await api.get(path, key);
      const notModified = await api.get(path, key, { 'if-none-match': ok.headers.get('etag')! });
      expect([ok.status, notModified.status]).toEqual([200, 304]);
      for (const [answer, code] of [
        [ok, '200'],
        [notModified, '304'],
      ] as const) {
        const headers = operation.responses[code]?.headers ?? {};
        // the budget headers come only with a rate limit (limits.unit.test.ts), Content-Encoding only
        // with compression (compression.unit.test.ts), Preference-Applied only on a held request
        // (change-waits.unit.test.ts)
        const names = Object.keys(headers)
          .map((name) => name.toLowerCase())
          .filter(
            (name) =>
              !name.startsWith('x-ratelimit-') &&
              name !== 'content-encoding' &&
              name !== 'preference-applied',
          );
        expect(sent.filter((name) => answer.headers.has(name))).toEqual(names);
        expect(headers['Cache-Control']).toMatchObject({
          schema: { const: answer.headers.get('cache-control') },
        });
      }
    }
  });

  it('gives no 304 without a valid key', async () => {
    const api = await startTestApi([issueKeyOf(1), ...orders(1, 1)]);
    const tag = (await api.get('/orders', key)).headers.get('etag')!;
    expect((await api.get('/orders', null, { 'if-none-match': tag })).status).toBe(401);
    expect((await api.get('/orders', 'not-a-key', { 'if-none-match': '*' })).status).toBe(401);
  });

  it('never gives two organizations the same /orders tag: another organization sending this one’s tag gets its own page', async () => {
    // Equal change counters (one order each, created the same way) and equal queries.
    const api = await startTestApi([issueKeyOf(1), issueKeyOf(2), ...orders(1, 1), ...orders(100, 1, 2)]);
    const first = await api.get('/orders', key);
    const second = await api.get('/orders', keyOf(2));
    expect(first.headers.get('etag')).not.toBe(second.headers.get('etag'));
    const crossed = await api.get('/orders', keyOf(2), { 'if-none-match': first.headers.get('etag')! });
    expect(crossed.status).toBe(200);
    expect((crossed.body as { data: { id: number }[] }).data.map((o) => o.id)).toEqual([100]);
  });

  it('keeps the tag when another organization changes, and changes it when this one does', async () => {
    const api = await startTestApi([issueKeyOf(1), ...orders(1, 2), ...orders(100, 2, 2)]);
    const tag = (await api.get('/orders', key)).headers.get('etag')!;
    api.apply(
      ...orders(200, 3, 2),
      orderUpdated({ order_id: 100, press_release_title: 'new' }, { occurred_at: at(900) }),
    );
    expect((await api.get('/orders', key, { 'if-none-match': tag })).status).toBe(304);
    api.apply(statusChanged(1, 'publishing', { occurred_at: at(901) }));
    const changed = await api.get('/orders', key, { 'if-none-match': tag });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(tag);
  });

  it('tags an order’s articles by that order: another order’s change keeps it, an article of its own changes it', async () => {
    const api = await startTestApi([
      issueKeyOf(1),
      ...orders(1, 2),
      articlePublished({ article_id: 1, order_id: 1 }),
    ]);
    const first = await api.get('/orders/1/articles', key);
    const tag = first.headers.get('etag')!;
    expect(first.headers.get('cache-control')).toBe('private, no-cache');
    api.apply(articlePublished({ article_id: 2, order_id: 2 }));
    expect((await api.get('/orders/1/articles', key, { 'if-none-match': tag })).status).toBe(304);
    api.apply(articlePublished({ article_id: 3, order_id: 1 }, { occurred_at: at(50) }));
    const changed = await api.get('/orders/1/articles', key, { 'if-none-match': tag });
    expect(changed.status).toBe(200);
    expect((changed.body as { data: unknown[] }).data).toHaveLength(2);
    // An order the caller cannot see answers 404 whatever If-None-Match says.
    expect((await api.get('/orders/999/articles', key, { 'if-none-match': '*' })).status).toBe(404);
  });

  it('changes the tag of both orders when an article is published again under another order', async () => {
    const api = await startTestApi([
      issueKeyOf(1),
      ...orders(1, 2),
      articlePublished({ article_id: 6, order_id: 1 }, { occurred_at: at(10) }),
    ]);
    const before = await api.get('/orders/1/articles', key);
    expect((before.body as { data: unknown[] }).data).toHaveLength(1);
    const otherBefore = await api.get('/orders/2/articles', key);
    api.apply(articlePublished({ article_id: 6, order_id: 2 }, { occurred_at: at(11) }));
    const left = await api.get('/orders/1/articles', key, {
      'if-none-match': before.headers.get('etag')!,
    });
    expect(left.status).toBe(200);
    expect((left.body as { data: unknown[] }).data).toHaveLength(0);
    const joined = await api.get('/orders/2/articles', key, {
      'if-none-match': otherBefore.headers.get('etag')!,
    });
    expect(joined.status).toBe(200);
    expect((joined.body as { data: unknown[] }).data).toHaveLength(1);
  });

  it('links the first, previous and last pages for the applied limit, offset and status, and the next by a cursor after the last order shown', async () => {
    const api = await startTestApi([issueKeyOf(1), ...orders(1, 7)]);
    const link = async (query: string): Promise<string | null> =>
      (await api.get(`/orders?${query}`, key)).headers.get('link');
    const path = '/api/external-api/v1/orders';
    const page = (offset: number, status = 'all', limit = 3): string =>
      `<${path}?limit=${limit}&offset=${offset}&status=${status}>`;
    // order n was created at(n): the next page starts after the last order shown
    const after = (id: number, status: 'all' | 'finished' = 'all', limit = 3): string =>
      `<${path}?limit=${limit}&status=${status}&cursor=${encodeCursor({
        direction: 'after',
        status,
        key: { createdAtMs: Date.parse(at(id)), createdAtSub: 0, orderId: id },
      })}>`;
    expect(await link('limit=3')).toBe(
      `${page(0)}; rel="first", ${after(5)}; rel="next", ${page(6)}; rel="last"`,
    );
    expect(await link('limit=3&offset=3&status=finished')).toBe(
      `${page(0, 'finished')}; rel="first", ${page(0, 'finished')}; rel="prev", ${after(2, 'finished')}; rel="next", ${page(6, 'finished')}; rel="last"`,
    );
    expect(await link('limit=3&offset=6')).toBe(
      `${page(0)}; rel="first", ${page(3)}; rel="prev", ${page(6)}; rel="last"`,
    );
    expect(await link('limit=500')).toBe(
      `${page(0, 'all', 200)}; rel="first", ${page(0, 'all', 200)}; rel="last"`,
    );
  });

  it('changes the tag whenever the answer would change (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        historyArbitrary({ orgs: 2, orders: 5, articles: 6, keys: 1, maxEvents: 30 }),
        async (history) => {
          const api = await startTestApi([issueKeyOf(1)], { register: false });
          try {
            let previous = await api.get('/orders?limit=3', key);
            let previousArticles = await api.get('/orders/1/articles', key);
            for (const event of history.filter(
              (e) => e.type !== 'api_key.issued' && e.type !== 'api_key.revoked',
            )) {
              api.apply(event);
              const answer = await api.get('/orders?limit=3', key);
              if (answer.headers.get('etag') === previous.headers.get('etag'))
                expect(answer.body).toEqual(previous.body);
              previous = answer;
              const articles = await api.get('/orders/1/articles', key);
              if (
                articles.status === 200 &&
                articles.headers.get('etag') === previousArticles.headers.get('etag')
              ) {
                expect(articles.body).toEqual(previousArticles.body);
              }
              previousArticles = articles;
            }
          } finally {
            await api.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

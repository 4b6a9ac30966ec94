import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { windowText } from '../../src/http/plugins/rate-limit.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';

async function limitedApi(max: number) {
  const model = memoryReadModel();
  model.apply(
    issueKeyOf(1),
    issueKeyOf(2),
    orderCreated({ order_id: 1, organization_id: 1, status: 'finished', created_at: at(10) }),
  );
  const reader = new ReadModelReader(model.db);
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
    rateLimit: { max, windowMs: 60_000 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    get: (path: string, key: string, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${address.port}/api/external-api/v1${path}`, {
        headers: { authorization: `Bearer ${key}`, ...headers },
      }),
    close: () => app.close(),
  };
}

describe('rate limiting and request limits', () => {
  it('answers 429 Too Many Requests with Retry-After once one key exceeds its limit, without slowing other keys', async () => {
    const api = await limitedApi(3);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      // a second into the window: the 429 still names the whole window, not what is left of it
      if (i === 3) await new Promise((wake) => setTimeout(wake, 1100));
      statuses.push((await api.get('/orders', keyOf(1))).status);
    }
    const limited = await api.get('/orders/1/articles', keyOf(1));
    const other = await api.get('/orders', keyOf(2));
    await api.close();
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toEqual({
      error: 'Too Many Requests',
      message: 'At most 3 requests per 60 seconds for one API key; retry after the time in Retry-After.',
    });
    expect(other.status).toBe(200);
  });

  it('names the window in the 429, whatever is left of it', () => {
    expect([1000, 60_000, 1500].map(windowText)).toEqual(['1 second', '60 seconds', '1500 milliseconds']);
  });

  it('limits nothing with a limit of 0, and states no budget', async () => {
    const api = await limitedApi(0);
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await api.get('/orders', keyOf(1)));
    await api.close();
    expect(answers.map((r) => [r.status, r.headers.get('x-ratelimit-limit')])).toEqual(
      Array.from({ length: 4 }, () => [200, null]),
    );
  });

  it("states the budget on every answer with GitHub's headers: the limit, what remains, the window's end in epoch seconds", async () => {
    const api = await limitedApi(3);
    const before = Math.floor(Date.now() / 1000);
    const answers = [
      await api.get('/orders', keyOf(1)),
      await api.get('/orders/1/articles', keyOf(1)),
      await api.get('/orders/999/articles', keyOf(1)),
      await api.get('/orders?status=nope', keyOf(1)),
      await api.get('/orders', keyOf(1)),
    ];
    await api.close();
    const budget = (r: Response) => [
      r.status,
      r.headers.get('x-ratelimit-limit'),
      r.headers.get('x-ratelimit-remaining'),
      r.headers.get('retry-after'),
    ];
    expect(answers.map(budget)).toEqual([
      [200, '3', '2', null],
      [200, '3', '1', null],
      [404, '3', '0', null],
      // refused by validation before the count
      [422, '3', '0', null],
      [429, '3', '0', expect.stringMatching(/^(59|60)$/) as string],
    ]);
    const resets = answers.map((r) => Number(r.headers.get('x-ratelimit-reset')));
    // one window for all five: it ends 60 s after the first request
    expect(new Set(resets).size).toBe(1);
    expect(resets[0]).toBeGreaterThanOrEqual(before + 60);
    expect(resets[0]).toBeLessThanOrEqual(before + 62);
  });

  it('does not count an answer of 304 Not Modified: Remaining stays where the 200 left it', async () => {
    const api = await limitedApi(3);
    const first = await api.get('/orders', keyOf(1));
    const etag = first.headers.get('etag') ?? '';
    const revalidations = [];
    for (let i = 0; i < 5; i += 1)
      revalidations.push(await api.get('/orders', keyOf(1), { 'if-none-match': etag }));
    const articles = await api.get('/orders/1/articles', keyOf(1));
    const articlesTag = articles.headers.get('etag') ?? '';
    const articlesAgain = await api.get('/orders/1/articles', keyOf(1), { 'if-none-match': articlesTag });
    const next = await api.get('/orders', keyOf(1));
    await api.close();
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(revalidations.map((r) => [r.status, r.headers.get('x-ratelimit-remaining')])).toEqual(
      Array.from({ length: 5 }, () => [304, '2']),
    );
    expect([articlesAgain.status, articlesAgain.headers.get('x-ratelimit-remaining')]).toEqual([304, '1']);
    expect([next.status, next.headers.get('x-ratelimit-remaining')]).toEqual([200, '0']);
  });

  it('documents in OpenAPI the budget headers on every answer but the 401, 431 and default, and Retry-After on the 429', async () => {
    const api = await limitedApi(1);
    const document = (await (await api.get('/openapi.json', keyOf(1))).json()) as {
      paths: Record<string, { get: { responses: Record<string, { headers?: Record<string, unknown> }> } }>;
    };
    const sent = await api.get('/orders', keyOf(1));
    const limited = await api.get('/orders', keyOf(1));
    await api.close();
    const budget = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
    expect(budget.filter((name) => sent.headers.has(name))).toEqual(budget);
    expect([...budget, 'retry-after'].filter((name) => limited.headers.has(name))).toHaveLength(4);
    expect(Object.keys(document.paths)).toContain('/orders');
    for (const path of Object.keys(document.paths)) {
      const responses = document.paths[path]!.get.responses;
      for (const [status, response] of Object.entries(responses)) {
        const names = Object.keys(response.headers ?? {}).map((name) => name.toLowerCase());
        const expected =
          status === '401' || status === '431' || status === 'default'
            ? []
            : status === '429' || status === '503'
              ? [...budget, 'retry-after']
              : budget;
        expect(names.filter((name) => name.startsWith('x-ratelimit-') || name === 'retry-after')).toEqual(
          expected,
        );
      }
    }
  });

  it('counts unauthenticated requests against no key: they get 401, not 429', async () => {
    const api = await limitedApi(1);
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await api.get('/orders', 'unknown')).status);
    await api.close();
    expect(statuses).toEqual([401, 401, 401]);
  });

  it('answers 431 with the Error object for headers or URLs over 16 KiB, and 404 for an overlong order id', async () => {
    const api = await limitedApi(0);
    const longHeader = await api.get('/orders', 'k'.repeat(20_000));
    const longUrl = await api.get(`/orders?status=${'a'.repeat(20_000)}`, keyOf(1));
    const longId = await api.get(`/orders/${'9'.repeat(500)}/articles`, keyOf(1));
    await api.close();
    expect(longHeader.status).toBe(431);
    expect(await longHeader.json()).toEqual({
      error: 'Request Header Fields Too Large',
      message: expect.any(String) as string,
    });
    expect(longUrl.status).toBe(431);
    // answered by Node's parser before a request exists: a fresh id, as on every other answer
    expect(longHeader.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(longUrl.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(longId.status).toBe(404);
    expect(longId.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await longId.json()).toEqual({
      error: 'Not Found',
      message: 'The order was not found or is not accessible with this API key.',
    });
  });
});

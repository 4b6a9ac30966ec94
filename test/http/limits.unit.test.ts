import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { memoryReadModel } from '../helpers/read-model.js';

async function limitedApi(max: number) {
  const model = memoryReadModel();
  model.apply(issueKeyOf(1), issueKeyOf(2));
  const reader = new ReadModelReader(model.db);
  const app = await buildApp({
    readerOf: () => reader,
    logger: pino({ level: 'silent' }),
    rateLimit: { max, windowMs: 60_000 },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    get: (path: string, key: string) =>
      fetch(`http://127.0.0.1:${address.port}/api/external-api/v1${path}`, {
        headers: { authorization: `Bearer ${key}` },
      }),
    close: () => app.close(),
  };
}

describe('rate limiting and request limits', () => {
  it('answers 429 Too Many Requests with Retry-After once one key exceeds its limit, without slowing other keys', async () => {
    const api = await limitedApi(3);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await api.get('/orders', keyOf(1))).status);
    const limited = await api.get('/orders/1/articles', keyOf(1));
    const other = await api.get('/orders', keyOf(2));
    await api.close();
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toEqual({
      error: 'Too Many Requests',
      message: expect.stringContaining('Retry-After') as string,
    });
    expect(other.status).toBe(200);
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

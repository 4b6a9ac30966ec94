import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { orderCreated, at } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { ServiceMetrics } from '../../src/metrics.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The API over a small model, rate limited to 5 requests per key, its log lines kept. */
async function api() {
  const model = memoryReadModel();
  model.apply(
    issueKeyOf(1),
    issueKeyOf(2),
    orderCreated({ order_id: 1, organization_id: 1, status: 'finished', created_at: at(10) }),
  );
  const reader = new ReadModelReader(model.db);
  const lines: string[] = [];
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'debug' }, { write: (line: string) => lines.push(line) }),
    rateLimit: { max: 5, windowMs: 60_000 },
  });
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await app.inject({ method: 'GET', url: path, headers });
    return { status: response.statusCode, id: response.headers['x-request-id'], etag: response.headers.etag };
  };
  return { app, get, lines, close: () => app.close().then(() => model.db.close()) };
}

const v1 = '/api/external-api/v1';
const bearer = (org: number): Record<string, string> => ({ authorization: `Bearer ${keyOf(org)}` });

describe('x-request-id', () => {
  it('is on every answer: 200, 304, 401, 404 (order, route, overlong id), 422, 429, the OpenAPI document', async () => {
    const { get, close } = await api();
    const ok = await get(`${v1}/orders`, bearer(1));
    const answers = {
      200: ok,
      304: await get(`${v1}/orders`, { ...bearer(1), 'if-none-match': String(ok.etag) }),
      401: await get(`${v1}/orders`),
      '404 order': await get(`${v1}/orders/999/articles`, bearer(1)),
      '404 route': await get(`${v1}/nowhere`, bearer(1)),
      '404 overlong id': await get(`${v1}/orders/${'9'.repeat(500)}/articles`, bearer(1)),
      422: await get(`${v1}/orders?status=nope`, bearer(1)),
      openapi: await get(`${v1}/openapi.json`),
    };
    for (let i = 0; i < 5; i += 1) await get(`${v1}/orders`, bearer(2));
    const limited = await get(`${v1}/orders`, bearer(2));
    await close();
    expect(limited.status).toBe(429);
    expect(limited.id).toMatch(uuid);
    expect(
      Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, answer.status])),
    ).toEqual({
      200: 200,
      304: 304,
      401: 401,
      '404 order': 404,
      '404 route': 404,
      '404 overlong id': 404,
      422: 422,
      openapi: 200,
    });
    const withoutId = Object.entries(answers).filter(([, answer]) => !uuid.test(String(answer.id)));
    expect(withoutId.map(([name]) => name)).toEqual([]);
    const ids = Object.values(answers).map((answer) => answer.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('reuses a sane incoming X-Request-Id, replaces any other, and the request log lines carry it', async () => {
    const { get, lines, close } = await api();
    const kept = await get(`${v1}/orders`, { ...bearer(1), 'x-request-id': 'trace-42.a_b' });
    const unauthorized = await get(`${v1}/orders`, { 'x-request-id': 'trace-43' });
    const tooLong = await get(`${v1}/orders`, { ...bearer(1), 'x-request-id': 'x'.repeat(65) });
    const odd = await get(`${v1}/orders`, { ...bearer(1), 'x-request-id': 'a b' });
    await close();
    expect(kept.id).toBe('trace-42.a_b');
    expect(unauthorized.id).toBe('trace-43');
    expect(tooLong.id).toMatch(uuid);
    expect(odd.id).toMatch(uuid);
    const logged = lines.map((line) => JSON.parse(line) as { reqId?: string; msg?: string });
    expect(logged.filter((line) => line.reqId === 'trace-42.a_b').length).toBeGreaterThan(0);
    expect(logged.filter((line) => line.reqId === tooLong.id).length).toBeGreaterThan(0);
  });
});

describe('request metrics', () => {
  it('counts every answer by method, route pattern and status code', async () => {
    const model = memoryReadModel();
    model.apply(issueKeyOf(1));
    const reader = new ReadModelReader(model.db);
    const metrics = new ServiceMetrics(() => null);
    const app = await buildApp({
      readerOf: () => apiReadsOfOneFile(reader),
      logger: pino({ level: 'silent' }),
      metrics,
    });
    const get = (url: string, org?: number) =>
      app.inject({ method: 'GET', url, headers: org === undefined ? {} : bearer(org) });
    for (let i = 0; i < 3; i += 1) await get(`${v1}/orders`, 1);
    await get(`${v1}/orders/7/articles`, 1);
    await get(`${v1}/orders/8/articles`, 1);
    await get(`${v1}/orders`);
    await get(`${v1}/nowhere`, 1);
    await app.close();
    model.db.close();
    const text = await metrics.requests.registry.metrics();
    const count = (route: string, status: number): number =>
      Number(
        new RegExp(
          `^orders_read_model_http_request_duration_seconds_count\\{method="GET",route="${route}",status_code="${status}"\\} (\\d+)$`,
          'm',
        ).exec(text)?.[1] ?? 0,
      );
    expect({
      list200: count(`${v1}/orders`, 200),
      articles404: count(`${v1}/orders/:id/articles`, 404),
      list401: count(`${v1}/orders`, 401),
      unmatched404: count(`${v1}/nowhere`, 404) + count('unmatched', 404),
    }).toEqual({ list200: 3, articles404: 2, list401: 1, unmatched404: 1 });
  });
});

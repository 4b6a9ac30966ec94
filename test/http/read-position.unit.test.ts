import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import type { DomainEvent } from '../../schemas/events.js';
import { buildApp } from '../../src/http/app.js';
import {
  maxPositionTokenLength,
  parsePositionToken,
  positionHeader,
  positionToken,
  reached,
} from '../../src/http/position.js';
import { offsetKey, ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { articlePublished, at, orderCreated, statusChanged } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';

/** A replica: its own model and its own app, fed events directly. */
async function replica(waitMs: number, modelTopics?: readonly string[]) {
  const model = memoryReadModel();
  const reader = new ReadModelReader(model.db);
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
    readPositionWaitMs: waitMs,
    ...(modelTopics === undefined ? {} : { modelTopics }),
  });
  afterAll(async () => {
    await app.close();
    model.db.close();
  });
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await app.inject({
      method: 'GET',
      url: `${API_PREFIX}${path}`,
      headers: { authorization: `Bearer ${keyOf(1)}`, ...headers },
    });
    return {
      status: response.statusCode,
      headers: response.headers,
      body: response.body === '' ? null : (JSON.parse(response.body) as unknown),
    };
  };
  return { model, get };
}

const history: DomainEvent[] = [
  issueKeyOf(1),
  ...Array.from({ length: 5 }, (_, i) =>
    orderCreated({ order_id: i + 1, organization_id: 1 }, { occurred_at: at(i) }),
  ),
  articlePublished({ article_id: 1, order_id: 2 }, { occurred_at: at(6) }),
  articlePublished({ article_id: 2, order_id: 2 }, { occurred_at: at(7) }),
  statusChanged(3, 'finished', { occurred_at: at(8) }),
];
const pages = ['/orders', '/orders?limit=2&offset=2', '/orders?status=finished', '/orders/2/articles'];

describe('tags and positions across replicas', () => {
  it('a tag from one replica earns a 304 from another holding the same data, applied in another order and batching', async () => {
    const a = await replica(0);
    const b = await replica(0);
    a.model.apply(...history);
    b.model.applyInBatches(
      3,
      [...history].reverse().sort((x, y) => (x.type < y.type ? -1 : 1)),
    );
    for (const page of pages) {
      const fromA = await a.get(page);
      expect(fromA.status).toBe(200);
      const fromB = await b.get(page, { 'if-none-match': String(fromA.headers.etag) });
      expect(fromB.status, page).toBe(304);
      expect(fromB.headers.etag).toBe(fromA.headers.etag);
    }
    // A change the page shows moves the tag.
    const before = await a.get('/orders');
    a.model.apply(statusChanged(1, 'finished', { occurred_at: at(9) }));
    const after = await a.get('/orders', { 'if-none-match': String(before.headers.etag) });
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(before.headers.etag);
  });

  it('a replica behind the presented position waits, then answers 503 with Retry-After, never its older page', async () => {
    const waitMs = 150;
    const ahead = await replica(waitMs);
    const behind = await replica(waitMs);
    ahead.model.apply(...history);
    behind.model.apply(...history.slice(0, -1));
    const seen = await ahead.get('/orders?status=finished');
    expect(seen.body).toMatchObject({ total: 1 });
    const token = String(seen.headers[positionHeader]);
    const started = performance.now();
    const answer = await behind.get('/orders?status=finished', { [positionHeader]: token });
    expect(performance.now() - started).toBeGreaterThanOrEqual(waitMs - 5);
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('1');
    expect(answer.body).toMatchObject({ error: 'Position not reached' });
    // Without the header, the same replica answers what it has.
    expect((await behind.get('/orders?status=finished')).body).toMatchObject({ total: 0 });
  });

  it('a replica that reaches the presented position while the request waits answers from it', async () => {
    const ahead = await replica(5000);
    const behind = await replica(5000);
    ahead.model.apply(...history);
    behind.model.apply(...history.slice(0, -1));
    const token = String((await ahead.get('/orders')).headers[positionHeader]);
    setTimeout(() => behind.model.apply(...history.slice(-1)), 50);
    const answer = await behind.get('/orders?status=finished', { [positionHeader]: token });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ total: 1 });
    expect(answer.headers[positionHeader]).toBe(token);
  });

  it('refuses a token it never gave with 400, and one within its position is answered at once', async () => {
    const a = await replica(1000);
    a.model.apply(...history);
    for (const bad of ['x', 'AgA', 'AQAB', '!!', 'A'.repeat(maxPositionTokenLength + 1)]) {
      const answer = await a.get('/orders', { [positionHeader]: bad });
      expect(answer.status, bad).toBe(400);
      expect(answer.body).toMatchObject({ error: 'Invalid read position' });
    }
    const own = String((await a.get('/orders')).headers[positionHeader]);
    expect(own.length).toBeLessThan(40);
    const answer = await a.get('/orders/2/articles', { [positionHeader]: own });
    expect(answer.status).toBe(200);
    expect(answer.headers[positionHeader]).toBe(own);
  });
});

describe('a well-formed token naming a topic this API never gave', () => {
  const modelTopics = [testTopics.orders, testTopics.orderStatus, testTopics.articles];
  const tokenOf = (topic: string, next: number): string =>
    positionToken(new Map([[offsetKey(topic, 0), next]]));

  it('is refused with 400 at once, whatever its offset; a configured topic is accepted before any of it is read', async () => {
    const waitMs = 2000;
    const empty = await replica(waitMs, modelTopics);
    const served = await replica(waitMs, modelTopics);
    empty.model.apply(issueKeyOf(1));
    served.model.apply(...history);
    for (const next of [0, 1, 5]) {
      for (const at of [empty, served]) {
        const started = performance.now();
        const answer = await at.get('/orders', {
          [positionHeader]: tokenOf('another-deployments-orders', next),
        });
        expect(answer.status, String(next)).toBe(400);
        expect(answer.body).toMatchObject({ error: 'Invalid read position' });
        expect(performance.now() - started).toBeLessThan(waitMs / 2);
      }
    }
    // A topic this replica has read nothing of yet, but is configured to read (another replica's token).
    const ahead = String((await served.get('/orders')).headers[positionHeader]);
    expect((await empty.get('/orders', { [positionHeader]: tokenOf(testTopics.orders, 0) })).status).toBe(
      200,
    );
    // The served replica's own token (its position also names the keys' topic, read into the same file here).
    expect((await served.get('/orders/2/articles', { [positionHeader]: ahead })).status).toBe(200);
    // A known topic beside an unknown one is still refused.
    const mixed = positionToken(
      new Map([
        [offsetKey(testTopics.orders, 0), 1],
        [offsetKey('another-deployments-orders', 0), 0],
      ]),
    );
    expect((await served.get('/orders', { [positionHeader]: mixed })).status).toBe(400);
  });
});

describe('position tokens', () => {
  const positions = fc
    .array(
      fc.tuple(
        fc.constantFrom('orders', 'order-status', 'articles', 'keys'),
        fc.integer({ min: 0, max: 11 }),
        // one below the largest safe integer: the position ahead of it must be one too
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 1 }),
      ),
      { maxLength: 30 },
    )
    .map((rows) => new Map(rows.map(([topic, partition, next]) => [offsetKey(topic, partition), next])));

  it('a position reaches the token of itself and of every position below it, and no position above', () => {
    fc.assert(
      fc.property(positions, fc.nat(), (position, pick) => {
        const required = parsePositionToken(positionToken(position));
        expect(required).not.toBeNull();
        if (required === null) return;
        expect(reached(position, required)).toBe(true);
        const keys = [...position.keys()];
        const key = keys[pick % Math.max(1, keys.length)];
        if (key === undefined) return;
        const next = position.get(key) ?? 0;
        const ahead = new Map(position).set(key, next + 1);
        expect(reached(position, parsePositionToken(positionToken(ahead)) ?? new Map())).toBe(false);
        if (next > 0) {
          const below = new Map(position).set(key, next - 1);
          expect(reached(position, parsePositionToken(positionToken(below)) ?? new Map())).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

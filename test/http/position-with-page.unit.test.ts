/**
 * The position an answer gives (`X-Read-Position`) names the read transaction its page was read in, when
 * the reader remembers a state (`cacheChanges`, as the service's readers do) and another
 * connection commits before the reader is told (`forgetChanges()` comes with the projector's batch
 * message, later): the page then sees the commit, so the position and the tag given with it must too.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { buildApp } from '../../src/http/app.js';
import { parsePositionToken, positionHeader, positionToken } from '../../src/http/position.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { offsetKey, ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { articlePublished, at, orderCreated } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const dir = tempDir('position-with-page');

/** The next offset a token names for partition 0 of `topic`. */
function nextOffsetOf(token: string, topic: string): number {
  const required = parsePositionToken(token);
  if (required === null) throw new Error(`not a token: ${token}`);
  const id = createHash('sha256').update(topic).digest().subarray(0, 3).toString('hex');
  return required.get(id)?.[0] ?? 0;
}

async function servedFile(name: string) {
  const file = join(dir, name);
  // The writer's connection, and the API's read-only one remembering digests and positions.
  const model = memoryReadModel(openOneFileModel(file));
  const reader = new ReadModelReader(openReadModel(file, { readonly: true }), { cacheChanges: true });
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
    readPositionWaitMs: 0,
  });
  afterAll(async () => {
    await app.close();
    reader.db.close();
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
      etag: String(response.headers.etag),
      token: String(response.headers[positionHeader]),
      body: response.body === '' ? null : (JSON.parse(response.body) as { data: { id: number }[] }),
    };
  };
  return { model, reader, get };
}

describe('a position read with the page', () => {
  it('names the commit a page shows although the reader was not yet told of it (GET /orders)', async () => {
    const { model, reader, get } = await servedFile('orders.sqlite');
    model.apply(issueKeyOf(1), orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(0) }));
    const first = await get('/orders');
    expect(first.status).toBe(200);
    expect(nextOffsetOf(first.token, testTopics.orders)).toBe(1);
    // A 304 from what is remembered names the same snapshot as the tag.
    const again = await get('/orders', { 'if-none-match': first.etag });
    expect(again.status).toBe(304);
    expect(again.token).toBe(first.token);

    // Order 2 is written at offset 1 of the orders topic; the reader is not told (no forgetChanges()).
    model.apply(orderCreated({ order_id: 2, organization_id: 1 }, { occurred_at: at(1) }));
    for (const headers of [{}, { 'if-none-match': first.etag }]) {
      const page = await get('/orders', headers);
      expect(page.status).toBe(200);
      expect(page.body?.data.map((order) => order.id)).toEqual([2, 1]);
      // The page holds the order at offset 1: its token must say offset 1 was read.
      expect(nextOffsetOf(page.token, testTopics.orders), JSON.stringify(headers)).toBe(2);
      expect(page.etag).not.toBe(first.etag);
      // The tag given is of the page: presented again, it is not modified.
      const revalidated = await get('/orders', { 'if-none-match': page.etag });
      expect(revalidated.status).toBe(304);
      expect(revalidated.token).toBe(page.token);
    }
    reader.forgetChanges();
  });

  it('names the commit the articles show, in one read with their tag (GET /orders/{id}/articles)', async () => {
    const { model, get } = await servedFile('articles.sqlite');
    model.apply(issueKeyOf(1), orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(0) }));
    const first = await get('/orders/1/articles');
    expect(first.status).toBe(200);
    expect(nextOffsetOf(first.token, testTopics.articles)).toBe(0);
    // Fill what is remembered with a page too, then commit an article unseen by the reader.
    await get('/orders');
    model.apply(articlePublished({ article_id: 7, order_id: 1 }, { occurred_at: at(1) }));
    const shown = await get('/orders/1/articles', { 'if-none-match': first.etag });
    expect(shown.status).toBe(200);
    expect(shown.body?.data.map((article) => article.id)).toEqual([7]);
    expect(nextOffsetOf(shown.token, testTopics.articles)).toBe(1);
    expect(shown.etag).not.toBe(first.etag);
    // And the list read after it (a remembered snapshot of the same state) agrees.
    const list = await get('/orders');
    expect(nextOffsetOf(list.token, testTopics.articles)).toBe(1);
  });

  it('answers a presented position the file has reached at once, although the reader was not yet told', async () => {
    const { model, get } = await servedFile('presented.sqlite');
    model.apply(issueKeyOf(1), orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(0) }));
    const first = await get('/orders');
    // Another replica has read offset 1 of the orders topic; this file has it, its reader is not told.
    model.apply(orderCreated({ order_id: 2, organization_id: 1 }, { occurred_at: at(1) }));
    const presented = positionToken(new Map([[offsetKey(testTopics.orders, 0), 2]]));
    const answer = await get('/orders', { [positionHeader]: presented, 'if-none-match': first.etag });
    expect(answer.status).toBe(200);
    expect(answer.body?.data.map((order) => order.id)).toEqual([2, 1]);
    expect(nextOffsetOf(answer.token, testTopics.orders)).toBe(2);
  });
});

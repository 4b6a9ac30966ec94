/**
 * The `X-Read-Position` a publisher builds from its producer's acknowledgement
 * (`src/http/position-built.ts`): what it requires, what is refused, and that a replica answers it
 * only once it has applied the record named.
 */
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { buildApp } from '../../src/http/app.js';
import { maxBuiltPartition, parseBuiltPosition } from '../../src/http/position-built.js';
import { positionHeader } from '../../src/http/position.js';
import { topicIdOf } from '../../src/http/position-token.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';

const required = (text: string): Record<string, readonly number[]> | null => {
  const built = parseBuiltPosition(text);
  return built === null ? null : Object.fromEntries(built.required);
};

describe('a built read position', () => {
  it('requires, per partition named, the offset after the record', () => {
    expect(required('topic=pr.orders;partition=0;offset=41')).toEqual({ [topicIdOf('pr.orders')]: [42] });
    expect(required('topic=pr.orders;partition=2;offset=0')).toEqual({ [topicIdOf('pr.orders')]: [0, 0, 1] });
    // several, in any key order, with spaces; the same partition twice: the later record
    expect(
      required(
        ' offset=7 ; topic=pr.orders;partition=1 , topic=pr.articles;partition=0;offset=3,topic=pr.orders;partition=1;offset=5',
      ),
    ).toEqual({ [topicIdOf('pr.orders')]: [0, 8], [topicIdOf('pr.articles')]: [4] });
    expect(parseBuiltPosition('topic=a;partition=0;offset=1')?.topics).toEqual(new Set(['a']));
  });

  it('refuses anything else', () => {
    for (const text of [
      '',
      'topic=pr.orders',
      'topic=pr.orders;partition=0',
      'topic=pr.orders;partition=0;offset=1;extra=2',
      'topic=pr.orders;topic=pr.orders;partition=0;offset=1',
      'topic=pr.orders;partition=0;offset=1,',
      ',topic=pr.orders;partition=0;offset=1',
      'topic=pr orders;partition=0;offset=1',
      'topic=pr/orders;partition=0;offset=1',
      `topic=${'t'.repeat(250)};partition=0;offset=1`,
      'topic=;partition=0;offset=1',
      'topic=pr.orders;partition=-1;offset=1',
      'topic=pr.orders;partition=01;offset=1',
      `topic=pr.orders;partition=${maxBuiltPartition + 1};offset=1`,
      'topic=pr.orders;partition=0;offset=-1',
      'topic=pr.orders;partition=0;offset=1.5',
      'topic=pr.orders;partition=0;offset=1e3',
      `topic=pr.orders;partition=0;offset=${Number.MAX_SAFE_INTEGER}`,
      'topic=pr.orders;partition=0;offset=99999999999999999',
      'TOPIC=pr.orders;partition=0;offset=1',
      'topic=pr.orders;partition=0;offset=',
    ]) {
      expect(parseBuiltPosition(text), text).toBeNull();
    }
    expect(parseBuiltPosition(`topic=pr.orders;partition=${maxBuiltPartition};offset=1`)).not.toBeNull();
  });

  it('is at most 4 096 characters long', () => {
    const entry = 'topic=pr.orders;partition=0;offset=1';
    const many = (n: number): string => Array<string>(n).fill(entry).join(',');
    const fits = many(Math.floor(4097 / (entry.length + 1)));
    expect(fits.length).toBeLessThanOrEqual(4096);
    expect(parseBuiltPosition(fits)).not.toBeNull();
    const over = `${fits},${entry}`;
    expect(over.length).toBeGreaterThan(4096);
    expect(parseBuiltPosition(over)).toBeNull();
  });
});

describe('a request presenting a built position', () => {
  async function replica() {
    const model = memoryReadModel();
    const reader = new ReadModelReader(model.db);
    const app = await buildApp({
      readerOf: () => apiReadsOfOneFile(reader),
      logger: pino({ level: 'silent' }),
      readPositionWaitMs: 0,
      modelTopics: [testTopics.orders, testTopics.orderStatus, testTopics.articles],
    });
    afterAll(async () => {
      await app.close();
      model.db.close();
    });
    const get = async (position: string, path = '/orders') => {
      const response = await app.inject({
        method: 'GET',
        url: `${API_PREFIX}${path}`,
        headers: { authorization: `Bearer ${keyOf(1)}`, [positionHeader]: position },
      });
      return { status: response.statusCode, body: JSON.parse(response.body) as unknown };
    };
    return { model, get };
  }

  it('is answered once the record it names is applied, never before', async () => {
    const { model, get } = await replica();
    // the orders topic's offsets 0–2 hold orders 1–3
    model.apply(
      issueKeyOf(1),
      ...[1, 2, 3].map((id) => orderCreated({ order_id: id, organization_id: 1 }, { occurred_at: at(id) })),
    );
    const record = (offset: number): string => `topic=${testTopics.orders};partition=0;offset=${offset}`;
    const applied = await get(record(2));
    expect(applied.status).toBe(200);
    expect((applied.body as { data: { id: number }[] }).data.map((o) => o.id)).toEqual([3, 2, 1]);
    // offset 3 is not applied yet: 503, never a page without it
    const ahead = await get(record(3));
    expect(ahead.status).toBe(503);
    expect(ahead.body).toMatchObject({ error: 'Position not reached' });
    model.apply(orderCreated({ order_id: 4, organization_id: 1 }, { occurred_at: at(4) }));
    const now = await get(record(3));
    expect(now.status).toBe(200);
    expect((now.body as { data: { id: number }[] }).data[0]?.id).toBe(4);
    // a partition never read counts as 0: its record 0 is not applied
    expect((await get(`topic=${testTopics.orders};partition=1;offset=0`)).status).toBe(503);
    // and on the other endpoint, several at once
    expect((await get(`${record(0)},topic=${testTopics.articles};partition=0;offset=0`)).status).toBe(503);
    expect((await get(`${record(1)}, ${record(3)}`, '/orders/4/articles')).status).toBe(200);
  });

  it('is refused with 400 when malformed or naming a topic the model is not read from', async () => {
    const { model, get } = await replica();
    model.apply(issueKeyOf(1));
    const malformed = await get('topic=orders;partition=0');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      error: 'Invalid read position',
      message:
        'X-Read-Position of a publisher must be `topic=<name>;partition=<n>;offset=<n>` entries, comma-separated, naming records a producer had acknowledged (partitions 0–9999, at most 4096 characters).',
    });
    for (const topic of [testTopics.apiKeys, 'pr.orders', 'other']) {
      const unknown = await get(`topic=${topic};partition=0;offset=0`);
      expect(unknown.status, topic).toBe(400);
      expect(unknown.body).toEqual({
        error: 'Invalid read position',
        message: `X-Read-Position names the topic ${topic}, which is not one of the topics this API reads. Name a record of one it reads, or send the request without it.`,
      });
    }
  });
});

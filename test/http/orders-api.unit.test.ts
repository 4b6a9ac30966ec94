import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import {
  articlePublished,
  apiKeyRevoked,
  at,
  orderCreated,
  orderDeleted,
  statusChanged,
} from '../helpers/events.js';
import { issueKeyOf, keyOf, startTestApi, type TestApi } from '../helpers/api.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

const ORG = 1;
const OTHER_ORG = 2;
const key = keyOf(ORG);

/** Org 1: orders 1–6 from three members; org 2: order 100. */
const world = [
  issueKeyOf(ORG),
  issueKeyOf(OTHER_ORG),
  orderCreated({
    order_id: 1,
    organization_id: ORG,
    member_id: 11,
    status: 'publishing',
    created_at: at(10),
  }),
  orderCreated({ order_id: 2, organization_id: ORG, member_id: 12, status: 'finished', created_at: at(20) }),
  orderCreated({
    order_id: 3,
    organization_id: ORG,
    member_id: 13,
    status: 'publishing_ended',
    created_at: '2026-11-01T12:30:00+02:00',
    distribution_date: '2026-11-05T08:00:00.750-05:00',
  }),
  orderCreated({ order_id: 4, organization_id: ORG, member_id: 11, status: 'draft', created_at: at(40) }),
  orderCreated({ order_id: 5, organization_id: ORG, member_id: 12, status: 'finished', created_at: at(50) }),
  orderCreated({ order_id: 6, organization_id: ORG, member_id: 13, status: 'finished', created_at: at(50) }),
  orderCreated({ order_id: 100, organization_id: OTHER_ORG, status: 'finished', created_at: at(60) }),
  articlePublished({
    article_id: 501,
    order_id: 2,
    published_at: at(100),
    article_url: 'https://www.alpha.example/a',
  }),
  articlePublished({ article_id: 502, order_id: 2, published_at: at(120), website_domain: 'Beta News' }),
  articlePublished({ article_id: 503, order_id: 2, published_at: at(120) }),
  articlePublished({ article_id: 900, order_id: 100, published_at: at(100) }),
];

const api = await startTestApi(world);

/**
 * An app of its own for one test: its routes are registered inside the test, so that what
 * registration builds (the 422 answers) is built under the test, where mutation testing sees it.
 */
async function withOwnApi(use: (own: TestApi) => Promise<void>): Promise<void> {
  const own = await startTestApi(world, { register: false });
  try {
    await use(own);
  } finally {
    await own.close();
  }
}
const ids = (body: unknown): number[] => (body as { data: { id: number }[] }).data.map((o) => o.id);

describe('GET /orders (SPEC rules)', () => {
  it('rule 1: includes the orders of all members of the organization and no other organization', async () => {
    const response = await api.get('/orders', key);
    expect(new Set(ids(response.body))).toEqual(new Set([1, 2, 3, 5, 6]));
  });

  it('rule 2: sorts by created_at, descending', async () => {
    const response = await api.get('/orders', key);
    const created = (response.body as { data: { created_at: string }[] }).data.map((o) => o.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(ids(response.body)).toEqual([3, 6, 5, 2, 1]);
  });

  it('rule 3: total counts the orders matching the status filter, before limit and offset', async () => {
    expect((await api.get('/orders?limit=1&offset=1', key)).body).toMatchObject({ total: 5 });
    expect((await api.get('/orders?status=finished&limit=1', key)).body).toMatchObject({ total: 3 });
    expect((await api.get('/orders?status=processing&offset=10', key)).body).toMatchObject({
      total: 2,
      data: [],
    });
  });

  it('rule 4: limit and offset in the response echo the values applied', async () => {
    expect((await api.get('/orders?limit=2&offset=3', key)).body).toMatchObject({ limit: 2, offset: 3 });
    expect((await api.get('/orders', key)).body).toMatchObject({ limit: 50, offset: 0 });
  });

  it('rule 5: answers 200 with the Order list envelope, timestamps in UTC as YYYY-MM-DD HH:MM:SS', async () => {
    const response = await api.get('/orders?status=processing', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({
      data: [
        {
          id: 3,
          press_release_title: 'Press release 3',
          order_status: 'processing',
          distribution_date_utc: '2026-11-05 13:00:00',
          created_at: '2026-11-01 10:30:00',
        },
        {
          id: 1,
          press_release_title: 'Press release 1',
          order_status: 'processing',
          distribution_date_utc: '2026-11-01 09:10:00',
          created_at: '2026-11-01 09:10:00',
        },
      ],
      total: 2,
      limit: 50,
      offset: 0,
    });
  });

  it('rule 6: answers 422 Invalid status, listing all, finished and processing, for any other status', () =>
    withOwnApi(async (api) => {
      for (const status of ['done', 'FINISHED', '', 'publishing']) {
        const response = await api.get(`/orders?status=${status}`, key);
        expect(response.status).toBe(422);
        expect(response.body).toEqual({
          error: 'Invalid status',
          message: 'status must be one of: `all`, `finished`, `processing`.',
        });
        const message = (response.body as { message: string }).message;
        for (const allowed of ORDER_STATUS_FILTERS) expect(message).toContain(allowed);
      }
    }));

  it('status filter: finished selects fully distributed orders, processing selects publishing and publishing_ended', async () => {
    expect(ids((await api.get('/orders?status=finished', key)).body)).toEqual([6, 5, 2]);
    expect(ids((await api.get('/orders?status=processing', key)).body)).toEqual([3, 1]);
    expect(ids((await api.get('/orders?status=all', key)).body)).toEqual([3, 6, 5, 2, 1]);
  });
});

describe('GET /orders/{id}/articles (SPEC rules)', () => {
  it('rule 1: answers 200 with the Article list envelope', async () => {
    const response = await api.get('/orders/2/articles', key);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({
      order_id: 2,
      press_release_title: 'Press release 2',
      data: [
        {
          id: 503,
          article_url: 'https://www.news-503.example/story/503',
          published_at: '2026-11-01 11:00:00',
          website_domain: 'news-503.example',
        },
        {
          id: 502,
          article_url: 'https://www.news-502.example/story/502',
          published_at: '2026-11-01 11:00:00',
          website_domain: 'Beta News',
        },
        {
          id: 501,
          article_url: 'https://www.alpha.example/a',
          published_at: '2026-11-01 10:40:00',
          website_domain: 'alpha.example',
        },
      ],
    });
  });

  it('rule 2: answers 404 Not Found for a missing order, another organization’s order and an unlisted order', async () => {
    for (const id of [999, 100, 4]) {
      const response = await api.get(`/orders/${id}/articles`, key);
      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        error: 'Not Found',
        message: 'The order was not found or is not accessible with this API key.',
      });
    }
  });
});

describe('authentication', () => {
  it('identifies the organization by the bearer key', async () => {
    expect(ids((await api.get('/orders', keyOf(OTHER_ORG))).body)).toEqual([100]);
  });

  it('accepts the Bearer scheme in any letter case', async () => {
    const response = await api.get('/orders', null, { authorization: `bearer ${key}` });
    expect(response.status).toBe(200);
  });
});

describe('DESIGN decisions', () => {
  it('missing, malformed, unknown or revoked key: 401 Unauthorized with WWW-Authenticate: Bearer', async () => {
    const revokedApi = await startTestApi([
      issueKeyOf(7, at(0)),
      apiKeyRevoked('test-api-key-of-org-7', { occurred_at: at(1) }),
    ]);
    const cases = [
      await api.get('/orders'),
      await api.get('/orders', null, { authorization: key }),
      await api.get('/orders', null, { authorization: 'Basic dXNlcjpwYXNz' }),
      await api.get('/orders', null, { authorization: 'Bearer ' }),
      await api.get('/orders', 'not-a-key'),
      await api.get('/orders/2/articles', 'not-a-key'),
      await revokedApi.get('/orders', keyOf(7)),
    ];
    for (const response of cases) {
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
      expect(response.body).toEqual({ error: 'Unauthorized', message: expect.any(String) as string });
    }
  });

  it('limit outside 1–200 and negative offset are clamped, and the applied values echoed', () =>
    withOwnApi(async (api) => {
      expect((await api.get('/orders?limit=0', key)).body).toMatchObject({ limit: 1, offset: 0 });
      expect((await api.get('/orders?limit=500&offset=-7', key)).body).toMatchObject({
        limit: 200,
        offset: 0,
      });
      expect(ids((await api.get('/orders?limit=-3', key)).body)).toEqual([3]);
    }));

  it('integers of any length or with leading zeros are numeric: clamped and echoed, never 422', async () => {
    expect((await api.get('/orders?limit=00000000000000050', key)).body).toMatchObject({ limit: 50 });
    expect((await api.get('/orders?offset=1234567890123456', key)).body).toMatchObject({
      data: [],
      offset: 1234567890123456,
    });
    expect(
      (await api.get('/orders?limit=99999999999999999999&offset=-99999999999999999999', key)).body,
    ).toMatchObject({ limit: 200, offset: 0 });
    // Beyond 2^53 − 1 the offset is taken as 2^53 − 1, the largest integer a JSON number carries exactly.
    const beyond = await api.get(`/orders?offset=${'9'.repeat(40)}`, key);
    expect(beyond.status).toBe(200);
    expect(beyond.body).toMatchObject({ data: [], offset: Number.MAX_SAFE_INTEGER });
  });

  it('limit or offset that is not an integer: 422 Invalid limit / Invalid offset naming the rule', () =>
    withOwnApi(async (api) => {
      for (const value of ['abc', '1.5', '', '1e3', ' 1', '0x10', '١٢']) {
        const limit = await api.get(`/orders?limit=${value}`, key);
        expect(limit.status).toBe(422);
        expect(limit.body).toEqual({
          error: 'Invalid limit',
          message: 'limit must be a decimal integer (values outside 1–200 are clamped).',
        });
        const offset = await api.get(`/orders?offset=${value}`, key);
        expect(offset.status).toBe(422);
        expect(offset.body).toEqual({
          error: 'Invalid offset',
          message:
            'offset must be a decimal integer (negative values count as 0, values beyond 2^53 − 1 as 2^53 − 1).',
        });
      }
    }));

  it('{id} that is not a positive integer: 404 with the same body as another organization’s order', async () => {
    const foreign = await api.get('/orders/100/articles', key);
    // '2e0', '+2', ' 2' and '0x2' are numbers to JavaScript, equal to 2: an order of the caller's
    for (const id of [
      'abc',
      '0',
      '-2',
      '1.5',
      '2e1',
      '2e0',
      '+2',
      '%202',
      '0x2',
      '99999999999999999999',
      '0000',
    ]) {
      const response = await api.get(`/orders/${id}/articles`, key);
      expect(response.status).toBe(404);
      expect(response.body).toEqual(foreign.body);
      // no tag for an order the caller cannot see
      expect(response.headers.get('etag')).toBeNull();
    }
  });

  it('{id} up to 2^53 − 1, leading zeros allowed: the order of that id', async () => {
    const largest = Number.MAX_SAFE_INTEGER;
    const edge = await startTestApi([
      issueKeyOf(ORG),
      orderCreated({ order_id: largest, organization_id: ORG, status: 'finished' }),
      articlePublished({ article_id: 1, order_id: largest }),
    ]);
    for (const id of [String(largest), `00${largest}`]) {
      const response = await edge.get(`/orders/${id}/articles`, key);
      expect(response.status, id).toBe(200);
      expect(response.body).toMatchObject({ order_id: largest });
      expect(response.headers.get('etag')).not.toBeNull();
    }
    expect((await edge.get(`/orders/${largest + 1}/articles`, key)).status).toBe(404);
  });

  it('equal created_at: ties broken by id descending, so pages never overlap or skip', async () => {
    expect(ids((await api.get('/orders?status=finished&limit=1', key)).body)).toEqual([6]);
    expect(ids((await api.get('/orders?status=finished&limit=1&offset=1', key)).body)).toEqual([5]);
  });

  it('articles: published_at descending, then id descending', async () => {
    expect(ids((await api.get('/orders/2/articles', key)).body)).toEqual([503, 502, 501]);
  });

  it('an {id} too long for the router: 401 without a valid key, 404 with one', async () => {
    const path = `/orders/${'9'.repeat(300)}/articles`;
    const foreign = await api.get('/orders/100/articles', key);
    expect((await api.get(path)).status).toBe(401);
    expect((await api.get(path, 'not-a-key')).status).toBe(401);
    const found = await api.get(path, key);
    expect(found.status).toBe(404);
    expect(found.body).toEqual(foreign.body);
  });

  it('{id} with leading zeros is the same order', async () => {
    expect((await api.get('/orders/0002/articles', key)).body).toEqual(
      (await api.get('/orders/2/articles', key)).body,
    );
  });

  it('unknown route: 401 without a valid key (authentication comes first), else a 404 Error object', async () => {
    const anonymous = await api.getRaw('/nowhere');
    expect(anonymous.status).toBe(401);
    expect((anonymous.body as { error: string }).error).toBe('Unauthorized');
    const response = await api.getRaw('/nowhere', keyOf(1));
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: 'Not Found', message: 'No route GET /nowhere.' });
  });

  it('unexpected failure: 500 Error object without internals, and the log has the error', async () => {
    const lines: string[] = [];
    const db = openReadModel(':memory:');
    const reader = new ReadModelReader(db);
    const app = await buildApp({
      readerOf: () => apiReadsOfOneFile(reader),
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }),
    });
    db.close();
    const response = await app.inject({
      url: '/api/external-api/v1/orders',
      headers: { authorization: `Bearer ${key}` },
    });
    await app.close();
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({
      error: 'Internal Server Error',
      message: 'An unexpected error occurred.',
    });
    expect(response.body).not.toMatch(/database|sqlite|stack/i);
    expect(
      lines.some((line) => line.includes('"level":50') && line.includes('database connection is not open')),
    ).toBe(true);
  });
});

describe('read model effects seen through the API', () => {
  it('hides a deleted order and its articles, and moves an order between status filters', async () => {
    const local = await startTestApi([
      issueKeyOf(ORG),
      orderCreated({ order_id: 1, organization_id: ORG }, { occurred_at: at(0) }),
      orderCreated({ order_id: 2, organization_id: ORG }, { occurred_at: at(0) }),
      articlePublished({ article_id: 1, order_id: 1 }),
    ]);
    local.apply(
      statusChanged(2, 'finished', { occurred_at: at(5) }),
      orderDeleted(1, { occurred_at: at(6) }),
    );
    expect((await local.get('/orders', key)).body).toMatchObject({
      total: 1,
      data: [{ id: 2, order_status: 'finished' }],
    });
    expect((await local.get('/orders/1/articles', key)).status).toBe(404);
  });
});

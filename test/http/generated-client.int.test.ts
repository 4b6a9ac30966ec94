/**
 * The API as a caller with a generated client sees it: types generated from schemas/openapi.json by
 * openapi-typescript (compared here with the committed `generated/openapi.ts`, which the type check
 * compiles this file against), requests made by openapi-fetch, against the whole service on a real
 * broker. Every answer must be one the document describes for its operation: its status listed,
 * each header it sends declared, its body valid against the declared schema. Order ids beyond
 * 2^31 − 1 come back exactly, and 304 is handled the way docs/api.md says.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import createClient from 'openapi-fetch';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { API_PREFIX } from '../../schemas/api.js';
import type { RunningService } from '../../src/service.js';
import { clientTypes, clientTypesFile, schemasDir } from '../../tools/contracts.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { articlePublished, at, orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture, type ServiceFixture } from '../helpers/service.js';
import type { components, paths } from './generated/openapi.js';

interface DocumentedResponse {
  headers?: Record<string, unknown>;
  content?: { 'application/json': { schema: object } };
}
interface Document {
  components: { schemas: Record<string, object> };
  paths: Record<string, { get: { responses: Record<string, DocumentedResponse> } }>;
}

const documentText = readFileSync(join(schemasDir, 'openapi.json'), 'utf8');
const document = JSON.parse(documentText) as Document;
/** A schema of the document with its `$ref`s where JSON Schema looks for them (`$defs`). */
const withDefinitions = (schema: object): z.core.JSONSchema.JSONSchema =>
  JSON.parse(
    JSON.stringify({ ...schema, $defs: document.components.schemas }).replaceAll(
      '#/components/schemas/',
      '#/$defs/',
    ),
  ) as z.core.JSONSchema.JSONSchema;

/** Headers of HTTP itself, which the document need not name. */
const transport = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);

/** Fails unless `response` (with its body as the client read it) is an answer the document describes. */
function expectDescribed(path: keyof paths, response: Response, body: unknown): void {
  const what = `GET ${path} answered ${response.status}`;
  const documented = document.paths[path]?.get.responses[String(response.status)];
  expect(documented, `${what}, a status the document does not list`).toBeDefined();
  const declared = Object.keys(documented?.headers ?? {}).map((name) => name.toLowerCase());
  const sent = [...response.headers.keys()].filter((name) => !transport.has(name));
  expect(
    sent.filter((name) => !declared.includes(name)),
    `${what} with headers the document does not declare`,
  ).toEqual([]);
  const schema = documented?.content?.['application/json'].schema;
  if (schema === undefined) {
    // openapi-fetch reads a body-less error answer as the empty text
    expect([undefined, ''], `${what} with a body the document does not describe`).toContain(body);
    return;
  }
  const parsed = z.fromJSONSchema(withDefinitions(schema)).safeParse(body);
  expect(parsed.error?.issues ?? [], `${what} with a body that breaks its schema`).toEqual([]);
}

const bigId = 3_000_000_001;
const otherOrgsId = 3_000_000_002;
const createdAt = at(30);

describe('a client generated from schemas/openapi.json (openapi-typescript, openapi-fetch)', () => {
  let fixture: ServiceFixture;
  let service: RunningService;
  let baseUrl: string;
  const clientOf = (orgId: number | null) =>
    createClient<paths>({
      baseUrl,
      headers: orgId === null ? {} : { authorization: `Bearer ${keyOf(orgId)}` },
    });

  beforeAll(async () => {
    fixture = await serviceFixture({ orders: 3, env: { RATE_LIMIT_MAX: '20' } });
    await fixture.publish([
      issueKeyOf(2),
      issueKeyOf(3),
      orderCreated(
        { order_id: bigId, organization_id: 1, status: 'finished', created_at: createdAt },
        { occurred_at: createdAt },
      ),
      articlePublished({ article_id: bigId + 10, order_id: bigId }, { occurred_at: at(40) }),
      orderCreated({ order_id: otherOrgsId, organization_id: 2 }, { occurred_at: at(31) }),
    ]);
    service = await fixture.start();
    // the server URL of the document is the API's prefix: a client's base URL is host + prefix
    baseUrl = fixture.apiUrl(service, '');
    expect(baseUrl.endsWith(API_PREFIX)).toBe(true);
    await waitUntil('the service has the order above 2^31', async () => {
      const answer = await fetch(fixture.apiUrl(service, `/orders/${otherOrgsId}/articles`), {
        headers: { authorization: `Bearer ${keyOf(2)}` },
      });
      await answer.text();
      return answer.status === 200;
    });
  });
  afterAll(async () => {
    await service.close();
  });

  it('uses the client types openapi-typescript generates from the committed document', async () => {
    expect(readFileSync(clientTypesFile, 'utf8'), 'run `npm run contracts`').toBe(
      await clientTypes(documentText),
    );
  });

  it('lists orders and revalidates with If-None-Match: 200, then 304 as the document says', async () => {
    const client = clientOf(1);
    // the server clamps limit: 500 is sent as it is, and the answer says what was applied
    const { data, error, response } = await client.GET('/orders', { params: { query: { limit: 500 } } });
    expectDescribed('/orders', response, data ?? error);
    expectTypeOf(data).toEqualTypeOf<components['schemas']['OrderList'] | undefined>();
    expect([response.status, data?.limit]).toEqual([200, 200]);
    const order = data?.data.find((row) => row.id === bigId);
    expectTypeOf(order?.id).toEqualTypeOf<number | undefined>();
    expect(order).toMatchObject({ id: 3000000001, order_status: 'finished' });
    // docs/api.md's line for JavaScript reads the UTC timestamp back as the event's time
    expect(new Date(`${order?.created_at.replace(' ', 'T')}Z`).toISOString()).toBe(createdAt);

    const etag = response.headers.get('etag') ?? '';
    const again = await client.GET('/orders', {
      params: { query: { limit: 500 }, header: { 'If-None-Match': etag } },
    });
    expectDescribed('/orders', again.response, again.data ?? again.error);
    expect([again.response.status, again.data]).toEqual([304, undefined]);
  });

  it('reads offsets and order ids beyond 2^31 − 1 exactly', async () => {
    const client = clientOf(1);
    const page = await client.GET('/orders', { params: { query: { offset: 3_000_000_000 } } });
    expectDescribed('/orders', page.response, page.data ?? page.error);
    expect(page.data).toMatchObject({ offset: 3_000_000_000, data: [] });

    const { data, error, response } = await client.GET('/orders/{id}/articles', {
      params: { path: { id: bigId } },
    });
    expectDescribed('/orders/{id}/articles', response, data ?? error);
    expectTypeOf(data).toEqualTypeOf<components['schemas']['ArticleList'] | undefined>();
    expect(data).toMatchObject({ order_id: 3000000001, data: [{ id: 3000000011 }] });
    const again = await client.GET('/orders/{id}/articles', {
      params: { path: { id: bigId }, header: { 'If-None-Match': response.headers.get('etag') ?? '' } },
    });
    expectDescribed('/orders/{id}/articles', again.response, again.data ?? again.error);
    expect(again.response.status).toBe(304);
  });

  it('answers every error case with a declared status and the Error type', async () => {
    const one = clientOf(1);
    const cases = [
      { status: 401, call: () => clientOf(null).GET('/orders') },
      {
        status: 401,
        call: () =>
          createClient<paths>({ baseUrl, headers: { authorization: 'Bearer nope' } }).GET('/orders'),
      },
      // a value the generated type does not allow, as an older or hand-written caller may send it
      {
        status: 422,
        call: () => one.GET('/orders', { params: { query: { status: 'cancelled' as 'all' } } }),
      },
      {
        status: 400,
        call: () => one.GET('/orders', { params: { header: { 'X-Read-Position': 'not-a-position' } } }),
      },
      {
        status: 431,
        call: () => one.GET('/orders', { headers: { 'x-padding': 'x'.repeat(17 * 1024) } }),
      },
    ] as const;
    for (const { status, call } of cases) {
      const { data, error, response } = await call();
      expectDescribed('/orders', response, data ?? error);
      expect(response.status).toBe(status);
      expect(error).toMatchObject({
        error: expect.any(String) as string,
        message: expect.any(String) as string,
      });
    }
    // another organization's order, as an unknown one
    const missing = await one.GET('/orders/{id}/articles', { params: { path: { id: otherOrgsId } } });
    expectDescribed('/orders/{id}/articles', missing.response, missing.error);
    expect(missing.response.status).toBe(404);
    expectTypeOf(missing.error).toEqualTypeOf<components['schemas']['Error'] | undefined>();
  });

  it('answers 429 with Retry-After once a key has spent RATE_LIMIT_MAX requests', async () => {
    const client = clientOf(3);
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { data, error, response } = await client.GET('/orders', { params: { query: { limit: 1 } } });
      expectDescribed('/orders', response, data ?? error);
      statuses.push(response.status);
    }
    const { data, error, response } = await client.GET('/orders', { params: { query: { limit: 1 } } });
    expectDescribed('/orders', response, data ?? error);
    expect([...new Set(statuses), response.status]).toEqual([200, 429]);
    expect(error?.message).toMatch(/^At most 20 requests per 60 seconds /);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

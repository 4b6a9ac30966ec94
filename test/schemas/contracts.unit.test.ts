import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { eventsJsonSchema, openApiDocument, schemasDir } from '../../tools/contracts.js';

const committed = (file: string): string => readFileSync(join(schemasDir, file), 'utf8');

describe('committed contracts', () => {
  it('events.schema.json matches the zod event schemas (run `npm run contracts` after changing them)', () => {
    expect(committed('events.schema.json')).toBe(eventsJsonSchema());
  });

  it('openapi.json matches the API route schemas (run `npm run contracts` after changing them)', async () => {
    expect(committed('openapi.json')).toBe(await openApiDocument());
  });

  it('openapi.json names each operation, for client generators, and states its licence', () => {
    const document = JSON.parse(committed('openapi.json')) as {
      info: { license?: { name: string; identifier?: string } };
      paths: Record<string, { get: { operationId?: string } }>;
    };
    const operationIds = Object.values(document.paths).map((path) => path.get.operationId);
    expect(operationIds).toEqual(['listOrders', 'listOrderArticles']);
    expect(document.info.license?.identifier).toMatch(/^LicenseRef-/);
  });

  it('openapi.json gives client generators named types, 64-bit integers, every answer and the API prefix', () => {
    interface Response {
      headers?: Record<string, unknown>;
      content?: { 'application/json': { schema: { $ref?: string } } };
    }
    interface Parameter {
      in: string;
      name: string;
      schema: Record<string, unknown>;
    }
    const document = JSON.parse(committed('openapi.json')) as {
      servers: { url: string }[];
      tags: { name: string }[];
      components: { schemas: Record<string, unknown> };
      paths: Record<
        string,
        { get: { tags: string[]; parameters: Parameter[]; responses: Record<string, Response> } }
      >;
    };
    expect(document.servers.map((server) => server.url)).toEqual([API_PREFIX]);
    expect(Object.keys(document.paths)).toEqual(['/orders', '/orders/{id}/articles']);
    expect(Object.keys(document.components.schemas)).toEqual([
      'Order',
      'OrderList',
      'Article',
      'ArticleList',
      'Error',
    ]);
    // every integer anywhere in the document is an int64 (ids reach 2^53 − 1)
    const integers: unknown[] = [];
    JSON.stringify(document, (_key, value: unknown) => {
      if (typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'integer')
        integers.push(value);
      return value;
    });
    // four ids, total, limit and offset of a page, and the three integer parameters
    expect(integers).toHaveLength(9);
    for (const integer of integers) expect(integer).toMatchObject({ format: 'int64' });
    const bodies: Record<string, string> = { '/orders': 'OrderList', '/orders/{id}/articles': 'ArticleList' };
    for (const [path, { get }] of Object.entries(document.paths)) {
      expect(get.tags).toEqual([document.tags[0]?.name]);
      expect(Object.keys(get.responses)).toEqual(
        expect.arrayContaining(['304', '401', '431', '500', 'default']),
      );
      for (const [status, response] of Object.entries(get.responses)) {
        expect(Object.keys(response.headers ?? {}), `${path} ${status}`).toContain('X-Request-Id');
        if (status === '304') continue;
        const named = status === '200' ? bodies[path] : 'Error';
        expect(response.content?.['application/json'].schema.$ref, `${path} ${status}`).toBe(
          `#/components/schemas/${named}`,
        );
      }
      expect(get.responses['401']?.headers).toHaveProperty('WWW-Authenticate');
      // the server clamps limit and offset and reads any digits: no range or pattern to refuse them
      for (const parameter of get.parameters.filter((p) => p.schema['type'] === 'integer'))
        expect(
          Object.keys(parameter.schema).filter((keyword) => !['type', 'format', 'example'].includes(keyword)),
          parameter.name,
        ).toEqual([]);
    }
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
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
});

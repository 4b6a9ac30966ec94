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
});

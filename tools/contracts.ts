/**
 * Generates the machine-readable contracts from the zod schemas:
 * `schemas/events.schema.json` (for the upstream publisher) and
 * `schemas/openapi.json` (for API callers). `npm run contracts` writes them;
 * a test fails when the committed files differ from what this produces.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { z } from 'zod';
import { DomainEvent, topicRoles } from '../schemas/events.js';
import { buildApp } from '../src/http/app.js';
import { openReadModel } from '../src/read-model/database.js';
import { ReadModelReader } from '../src/read-model/reader.js';
import { isEntryPoint, projectRoot } from './harness.js';
import { apiReadsOfOneFile } from '../src/keys/key-lookup.js';

export const schemasDir = join(projectRoot, 'schemas');

export function eventsJsonSchema(): string {
  const schema = {
    ...z.toJSONSchema(DomainEvent, { io: 'input', target: 'draft-2020-12' }),
    $id: 'https://orders-read-model/schemas/events.schema.json',
    title: 'Events published to the orders read model',
    description:
      'One Kafka message value (UTF-8 JSON). Unknown extra fields are ignored. Topics and the types each carries: ' +
      Object.entries(topicRoles)
        .map(([role, types]) => `${role}: ${types.join(', ')}`)
        .join('; '),
  };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

export async function openApiDocument(): Promise<string> {
  const db = openReadModel(':memory:');
  const reader = new ReadModelReader(db);
  const app = await buildApp({
    readerOf: () => apiReadsOfOneFile(reader),
    logger: pino({ level: 'silent' }),
  });
  await app.ready();
  const document = app.swagger();
  await app.close();
  db.close();
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (isEntryPoint(import.meta.url)) {
  writeFileSync(join(schemasDir, 'events.schema.json'), eventsJsonSchema());
  writeFileSync(join(schemasDir, 'openapi.json'), await openApiDocument());
  console.log(`wrote ${join(schemasDir, 'events.schema.json')} and ${join(schemasDir, 'openapi.json')}`);
}

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The projection's version. A change to what the projection computes or to its tables means a new
 * version and a rebuild from the topics, never an in-place migration of projected rows.
 */
export const PROJECTION_VERSION = 3;

/** The tables and indexes of the current version (`schema.sql`), as one script for a new file. */
export function schemaSql(): string {
  return readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'schema.sql'), 'utf8');
}

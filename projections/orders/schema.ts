/**
 * The projection's version. A change to what the projection computes or to its tables means a new
 * version and a rebuild from the topics, never an in-place migration of projected rows. The keys
 * store has a version of its own (`projections/keys/schema.ts`): this one does not move it.
 */
import type { StoreSchema } from '../store-schema.js';

export const PROJECTION_VERSION = 4;

/**
 * What a file of this version is made of, as a SHA-256: `schema.sql` without its comments, and where
 * each column goes in the digests' hashed text (`digestLayouts`). Changing either without a new
 * `PROJECTION_VERSION` would open the files of this version as if they were the new code's, so
 * `test/projections/projection-version.unit.test.ts` fails until both are changed together.
 */
export const PROJECTION_SCHEMA_SHA256 = '1b594050b971ced8eb9681a71829f6aca72c00d5f296078c948a8ca85c478168';

/**
 * Where the tables and indexes of the current version are (`schema.sql`), as one script for a new
 * file; the read-model store reads it (a projection touches no file itself).
 */
export const schemaSqlFile = new URL('./schema.sql', import.meta.url);

/** The orders model's files (`model-….sqlite`). */
export const ordersModelSchema: StoreSchema = {
  versionName: 'projection version',
  version: PROJECTION_VERSION,
  schemaSqlFile,
};

/**
 * The projection's version. A change to what the projection computes or to its tables means a new
 * version and a rebuild from the topics, never an in-place migration of projected rows. The keys
 * store has a version of its own (`projections/keys/schema.ts`): this one does not move it.
 */
import type { StoreSchema } from '../store-schema.js';

export const PROJECTION_VERSION = 4;

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

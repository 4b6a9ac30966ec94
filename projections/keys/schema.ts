/**
 * The keys store's version, its own and apart from the orders model's `PROJECTION_VERSION`: a
 * change to the keys' rules or tables bumps it and builds a successor store (`keys-v<N>.sqlite`)
 * beside the old one, and changes nothing of the orders model; a new projection version changes
 * nothing of the keys store.
 *
 * It starts at 4, the projection version whose code last named the keys file after the orders
 * model (`keys-v4.sqlite`): that file has the same `api_keys`, `consumer_offsets` and
 * `projection_meta` tables and records version 4, so a replica upgraded onto this code adopts it as
 * it is, with every revocation in it (docs/architecture.md, "The keys store").
 */
import type { StoreSchema } from '../store-schema.js';

export const KEYS_STORE_VERSION = 4;

/** The keys store's tables and indexes of this version, as one script for a new file. */
export const keysSchemaSqlFile = new URL('./schema.sql', import.meta.url);

export const keysStoreSchema: StoreSchema = {
  versionName: 'keys store version',
  version: KEYS_STORE_VERSION,
  schemaSqlFile: keysSchemaSqlFile,
};

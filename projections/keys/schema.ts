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

/**
 * The `api_keys` columns a keys store version added since version 4, each nullable with no default.
 * The predecessor that answers beside its successor lacks them: it reads each as NULL (`keysSqlFor`)
 * and seeds the successor with NULL in it (`seedFromPredecessor`). So NULL must mean what the new
 * rules make of every fact the predecessor applied, and grant no more than its events said; a column
 * for which it cannot needs new code in `src/keys/` that reads and seeds its predecessor otherwise.
 * Any other column a store lacks is refused.
 */
export const keysColumnsAdded: readonly string[] = [];

/** The keys store's tables and indexes of this version, as one script for a new file. */
export const keysSchemaSqlFile = new URL('./schema.sql', import.meta.url);

export const keysStoreSchema: StoreSchema = {
  versionName: 'keys store version',
  version: KEYS_STORE_VERSION,
  schemaSqlFile: keysSchemaSqlFile,
};

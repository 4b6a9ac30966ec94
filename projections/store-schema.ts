/**
 * What a store's file is made from: its schema script and its version. Each store has its own
 * (`orders/schema.ts`, `keys/schema.ts`), so changing one never rebuilds the other. A new file is
 * created from its store's script alone; a file of another version is never migrated in place.
 */
export interface StoreSchema {
  /** how a version of this store is named in messages: "projection version", "keys store version" */
  versionName: string;
  version: number;
  /** the tables and indexes of this version, as one script for a new file */
  schemaSqlFile: URL;
}

import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The projection's version. A change to what the projection computes or to
 * its tables means a new version and a rebuild from the topics, never an
 * in-place migration of projected rows.
 */
export const PROJECTION_VERSION = 3;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Numbered SQL files (`001_initial.sql`, …), in order. */
export function loadMigrations(): Migration[] {
  return readdirSync(migrationsDir)
    .filter((file) => /^\d{3}_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 3)),
      name: file,
      sql: readFileSync(join(migrationsDir, file), 'utf8'),
    }));
}

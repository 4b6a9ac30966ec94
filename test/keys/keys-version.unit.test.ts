/**
 * The keys store has a version of its own. A new projection version of the orders model (mocked
 * here as the next one) builds no new keys store, and the `keys-v4.sqlite` the code before the split
 * left (the orders model's schema with `api_keys`, recording projection version 4) is adopted as it
 * is, revocations included: no successor, no predecessor, nothing rebuilt.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { KEYS_STORE_VERSION, keysSchemaSqlFile, keysStoreSchema } from '../../projections/keys/schema.js';
import { PROJECTION_VERSION, schemaSqlFile } from '../../projections/orders/schema.js';
import { metaSql } from '../../projections/orders/sql.js';
import { KeyLookup } from '../../src/keys/key-lookup.js';
import { newCommitCounter } from '../../src/read-model/commit-counter.js';
import { keysFile, openKeysFiles } from '../../src/keys/keys-files.js';
import { openReadModel } from '../../src/read-model/database.js';
import { apiKeyIssued, apiKeyRevoked, at } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

vi.mock('../../projections/orders/schema.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../../projections/orders/schema.js')>();
  const next = actual.PROJECTION_VERSION + 1;
  return {
    ...actual,
    PROJECTION_VERSION: next,
    ordersModelSchema: { ...actual.ordersModelSchema, version: next },
  };
});

const hash = (c: string): string => c.repeat(64);

/** A keys store as the code before the split created it: the orders model's tables and api_keys, version 4. */
function preSplitKeysStore(dir: string): string {
  const file = join(dir, 'keys-v4.sqlite');
  const db = new Database(file);
  db.exec(readFileSync(schemaSqlFile, 'utf8'));
  db.exec(readFileSync(keysSchemaSqlFile, 'utf8'));
  db.prepare(metaSql.insertProjectionVersion).run('4');
  db.close();
  const model = memoryReadModel(openReadModel(file, { store: keysStoreSchema }));
  model.apply(
    apiKeyIssued('k1', 1, hash('a'), { occurred_at: at(1) }),
    apiKeyIssued('k2', 2, hash('b'), { occurred_at: at(1) }),
    apiKeyRevoked('k1', { occurred_at: at(2) }),
  );
  model.db.close();
  return file;
}

describe('the keys store version', () => {
  it('is its own: a new projection version names no new keys store', async () => {
    const actual = await vi.importActual<typeof import('../../projections/orders/schema.js')>(
      '../../projections/orders/schema.js',
    );
    expect(PROJECTION_VERSION).toBe(actual.PROJECTION_VERSION + 1);
    expect(KEYS_STORE_VERSION).toBe(4);
    expect(keysFile('/data')).toBe('/data/keys-v4.sqlite');
  });

  it('adopts the keys-v4.sqlite of the code before the split as it is, with its revocations', () => {
    const dir = tempDir('keys-version');
    const file = preSplitKeysStore(dir);
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    expect(openKeysFiles(dir, logger)).toEqual({ file, predecessor: null });
    expect(lines).toEqual([]);
    expect(readdirSync(dir).filter((name) => name.endsWith('.sqlite'))).toEqual(['keys-v4.sqlite']);
    const lookup = KeyLookup.open({ id: 1, file, predecessor: null, commits: newCommitCounter() });
    try {
      expect(lookup.orgOfKeyHash(hash('a'))).toBeNull();
      expect(lookup.orgOfKeyHash(hash('b'))).toBe(2);
    } finally {
      lookup.close();
    }
  });
});

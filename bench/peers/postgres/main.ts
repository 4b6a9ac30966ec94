/**
 * The peer as one process, as a team would run it: its schema, its consumer and its API against a
 * PostgreSQL server named by the environment. Prints `listening <port>` once it answers.
 *
 *   PEER_PG_URL=postgres://user:password@127.0.0.1:port/db KAFKA_BROKERS=… TOPIC_…=… (each stream's
 *   variable, `schemas/streams.ts`) PEER_GROUP_ID=… PEER_HTTP_PORT=… [PEER_PARTITIONS_CONCURRENTLY=3]
 *   [PEER_DESIGN=naive|competent] node dist/peer/bench/peers/postgres/main.js
 *
 * The naive design answers from a pool of 10 connections; the competent one from a pool of one
 * connection per core (more cannot run at once on this machine, and each costs a backend's memory),
 * with its key cache invalidated by its own projector. PEER_PG_URL names the server's Unix socket for
 * the competent design (`process.ts`).
 */
import { availableParallelism } from 'node:os';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { perStream, streams, type TopicRole } from '../../../schemas/streams.js';
import { buildPeerApp, KeyCache } from './api.js';
import { startPeerProjector } from './projector.js';
import { peerDesigns, peerSchemaSql, type PeerDesign } from './schema.js';

// bigint columns (ids, epoch milliseconds, counts) as numbers: every one of them is a safe integer.
pg.types.setTypeParser(pg.types.builtins.INT8, Number);

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

const topics: Record<TopicRole, string> = perStream((role) => env(streams[role].variable));
const partitionsConcurrently = Number(process.env['PEER_PARTITIONS_CONCURRENTLY'] ?? 3);
const design = (process.env['PEER_DESIGN'] ?? 'naive') as PeerDesign;
if (!peerDesigns.includes(design)) throw new Error(`PEER_DESIGN must be one of ${peerDesigns.join(', ')}`);

const connectionString = env('PEER_PG_URL');
// The projector commits without waiting for the WAL flush, as the service's SQLite (WAL, synchronous
// NORMAL) does: a crash may lose the last commits, never half of one, and their offsets go with them.
const projectorPool = new pg.Pool({
  connectionString,
  max: partitionsConcurrently,
  options: '-c synchronous_commit=off',
});
const apiPool = new pg.Pool({ connectionString, max: design === 'naive' ? 10 : availableParallelism() });

await projectorPool.query(peerSchemaSql(design));
const keyCache = design === 'competent' ? new KeyCache() : undefined;
const kafka = new Kafka({
  clientId: 'peer-postgres',
  brokers: env('KAFKA_BROKERS').split(','),
  logLevel: logLevel.NOTHING,
});
const consumer = await startPeerProjector({
  kafka,
  pool: projectorPool,
  topics,
  groupId: env('PEER_GROUP_ID'),
  partitionsConcurrently,
  design,
  committed: (batch) => {
    if (batch.apiKeys.size > 0) keyCache?.invalidate();
  },
});
const app = await buildPeerApp(apiPool, design, keyCache);
await app.listen({ host: '127.0.0.1', port: Number(env('PEER_HTTP_PORT')) });
console.log(`listening ${env('PEER_HTTP_PORT')}`);

let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await app.close();
  await consumer.disconnect();
  await Promise.all([apiPool.end(), projectorPool.end()]);
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());

/**
 * The peer as one process, as a team would run it: its schema, its consumer and its API against a
 * PostgreSQL server named by the environment. Prints `listening <port>` once it answers.
 *
 *   PEER_PG_URL=postgres://user:password@127.0.0.1:port/db KAFKA_BROKERS=… TOPIC_ORDERS=… TOPIC_ORDER_STATUS=…
 *   TOPIC_ARTICLES=… TOPIC_API_KEYS=… PEER_GROUP_ID=… PEER_HTTP_PORT=… [PEER_PARTITIONS_CONCURRENTLY=3]
 *   node dist/peer/bench/peers/postgres/main.js
 */
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import type { TopicRole } from '../../../schemas/events.js';
import { buildPeerApp } from './api.js';
import { startPeerProjector } from './projector.js';
import { peerSchemaSql } from './schema.js';

// bigint columns (ids, epoch milliseconds, counts) as numbers: every one of them is a safe integer.
pg.types.setTypeParser(pg.types.builtins.INT8, Number);

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

const topics: Record<TopicRole, string> = {
  orders: env('TOPIC_ORDERS'),
  orderStatus: env('TOPIC_ORDER_STATUS'),
  articles: env('TOPIC_ARTICLES'),
  apiKeys: env('TOPIC_API_KEYS'),
};
const partitionsConcurrently = Number(process.env['PEER_PARTITIONS_CONCURRENTLY'] ?? 3);

const connectionString = env('PEER_PG_URL');
// The projector commits without waiting for the WAL flush, as the service's SQLite (WAL, synchronous
// NORMAL) does: a crash may lose the last commits, never half of one, and their offsets go with them.
const projectorPool = new pg.Pool({
  connectionString,
  max: partitionsConcurrently,
  options: '-c synchronous_commit=off',
});
const apiPool = new pg.Pool({ connectionString, max: 10 });

await projectorPool.query(peerSchemaSql);
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
});
const app = await buildPeerApp(apiPool);
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

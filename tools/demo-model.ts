/**
 * The demo's model directory (`data/demo`) belongs to one Kafka cluster. A model holds the positions
 * of its cluster's topics: against another cluster (a fresh local broker, or KAFKA_BROKERS naming
 * another one) it would skip the new events up to those positions, the new demo key among them.
 * The directory records its cluster's id, and is emptied when the broker's id differs.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';

const clusterFile = 'kafka-cluster-id';

/** The id of the cluster `brokers` (comma-separated host:port) belong to. */
export async function clusterIdOf(brokers: string): Promise<string> {
  const kafka = new Kafka({
    clientId: 'orders-read-model-demo',
    brokers: brokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return (await admin.describeCluster()).clusterId;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Keeps `dir` when it was made against `clusterId`, else empties it; either way it then records
 * `clusterId`. Answers what it did, for the demo to say.
 */
export function modelDirFor(dir: string, clusterId: string): 'kept' | 'emptied' | 'new' {
  const file = join(dir, clusterFile);
  // an id is a few dozen characters; a larger file is no record of ours
  const recorded = existsSync(file) ? readFileSync(file, 'utf8').slice(0, 200).trim() : null;
  const outcome = recorded === clusterId ? 'kept' : existsSync(dir) ? 'emptied' : 'new';
  if (outcome === 'emptied') rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, `${clusterId}\n`);
  return outcome;
}

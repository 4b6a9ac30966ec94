/**
 * Creating topics and waiting until every partition has a leader. kafkajs's own wait
 * (`waitForLeaders`) tolerates only LEADER_NOT_AVAILABLE while it polls the metadata; a broker
 * whose metadata cache has not caught up with its controller answers UNKNOWN_TOPIC_OR_PARTITION
 * for a moment instead, and kafkajs then fails a creation that succeeded. Both answers mean "not
 * yet" here, until the deadline.
 */
import type { Admin } from './kafkajs-client.js';

export interface TopicToCreate {
  topic: string;
  numPartitions: number;
  replicationFactor?: number;
  configEntries?: { name: string; value: string }[];
}

/** what the metadata answers while a created topic's partitions are still being placed */
const notYet = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']);

/** The error, or the one kafkajs gave up retrying (its `cause`), says "not yet". */
function isNotYet(error: unknown): boolean {
  const { type, cause } = (error ?? {}) as { type?: string; cause?: { type?: string } };
  return notYet.has(type ?? '') || notYet.has(cause?.type ?? '');
}

export const leadersTimeoutMs = 30_000;

/** Creates the topics, then resolves once each has its partitions, every one with a leader. */
export async function createTopicsWithLeaders(
  admin: Admin,
  topics: readonly TopicToCreate[],
  timeoutMs = leadersTimeoutMs,
  intervalMs = 100,
): Promise<void> {
  if (topics.length === 0) return;
  await admin.createTopics({ waitForLeaders: false, topics: [...topics] });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const missing = await withoutLeaders(admin, topics);
    if (missing.length === 0) return;
    if (Date.now() >= deadline) {
      throw new Error(
        `topics created, but without a leader for every partition after ${timeoutMs} ms: ${missing.join(', ')}`,
      );
    }
    await new Promise((wake) => setTimeout(wake, intervalMs));
  }
}

/** The topics whose metadata does not yet show every partition with a leader. */
async function withoutLeaders(admin: Admin, topics: readonly TopicToCreate[]): Promise<string[]> {
  let metadata;
  try {
    metadata = await admin.fetchTopicMetadata({ topics: topics.map(({ topic }) => topic) });
  } catch (error) {
    if (isNotYet(error)) return topics.map(({ topic }) => topic);
    throw error;
  }
  const led = new Map(
    metadata.topics.map(({ name, partitions }) => [
      name,
      partitions.filter((p) => p.partitionErrorCode === 0 && p.leader >= 0).length,
    ]),
  );
  return topics
    .filter(({ topic, numPartitions }) => (led.get(topic) ?? 0) < numPartitions)
    .map(({ topic }) => topic);
}

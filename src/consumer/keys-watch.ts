/**
 * The keys topic alone, projected into memory in the main thread. It runs while the served model is
 * of an older projection version (nobody projects into it while its successor is built), so that
 * an issue or a revocation counts within a second however busy the rebuild's thread is: the keys
 * topic is small, and its batches cost the event loop next to nothing.
 */
import { roleOfTopic } from '../config.js';
import type { Consumption, KafkaPort } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openReadModel } from '../read-model/database.js';
import { ReadModelReader } from '../read-model/reader.js';
import { offsetKey, ReadModelWriter } from '../read-model/writer.js';
import type { TopicRole } from '../../schemas/events.js';
import { decodeBatch } from './decode.js';

export interface KeysWatch {
  positions(): ReadonlyMap<string, number>;
  orgOfKeyHash(keySha256: string): number | null;
  readonly failed: Promise<Error>;
  stop(): Promise<void>;
}

export async function startKeysWatch(options: {
  port: Pick<KafkaPort, 'consume'>;
  topics: Record<TopicRole, string>;
  groupId: string;
  logger: Logger;
}): Promise<KeysWatch> {
  const db = openReadModel(':memory:');
  const writer = new ReadModelWriter(db, roleOfTopic(options.topics));
  const reader = new ReadModelReader(db);
  const positions = new Map<string, number>();
  let consumption: Consumption;
  try {
    consumption = await options.port.consume({
      groupId: options.groupId,
      topics: [options.topics.apiKeys],
      startAt: (topic, partition) => writer.storedOffset(topic, partition),
      onBatch: (batch) => {
        const outcome = writer.applyBatch(
          batch.topic,
          batch.partition,
          decodeBatch('apiKeys', batch.messages),
          batch.next,
        );
        if (outcome.nextOffset !== null)
          positions.set(offsetKey(batch.topic, batch.partition), outcome.nextOffset);
      },
    });
  } catch (error) {
    db.close();
    throw error;
  }
  options.logger.info(
    { groupId: options.groupId },
    'watching the keys topic while the served model is rebuilt',
  );
  return {
    positions: () => positions,
    orgOfKeyHash: (hash) => reader.orgOfKeyHash(hash),
    failed: consumption.failed,
    stop: async () => {
      try {
        await consumption.stop();
      } finally {
        db.close();
      }
    },
  };
}

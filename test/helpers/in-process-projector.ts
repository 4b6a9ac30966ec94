/** Projectors run in the test's own thread over a Kafka port: the lifecycle's `StartProjector` for fast tests. */
import { keysStoreSchema } from '../../projections/keys/schema.js';
import type { TopicRole } from '../../schemas/streams.js';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/projector/projector.js';
import { projectorRoles } from '../../src/projector/subscriptions.js';
import { type KafkaPort, offsetKey } from '../../src/kafka/port.js';
import type { RunningProjector, StartProjector } from '../../src/projector/projector-handle.js';
import type { Logger } from '../../src/logger.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { dirname } from 'node:path';

export function inProcessProjectors(
  port: KafkaPort,
  topics: Record<TopicRole, string>,
  logger: Logger,
  /** awaited before every batch is applied (given the projector's file); throwing there fails the projector */
  beforeBatch: (file: string) => void | Promise<void> = () => undefined,
): StartProjector {
  return async (spec): Promise<RunningProjector> => {
    // the keys consumer writes the keys store, of its own schema and version, as the worker does
    const db = openReadModel(
      spec.file,
      spec.roles?.includes('apiKeys') === true ? { store: keysStoreSchema } : {},
    );
    const writer = new ReadModelWriter(db, roleOfTopic(topics), undefined, spec.commits);
    const roles = projectorRoles(spec);
    const read = new Set(roles.map((role) => topics[role]));
    const positions = new Map(
      writer
        .storedOffsets()
        .filter((o) => read.has(o.topic))
        .map((o) => [offsetKey(o.topic, o.partition), o.nextOffset]),
    );
    let closed = false;
    const close = (): void => {
      if (!closed) db.close();
      closed = true;
    };
    try {
      const consumption = await runProjection({
        port: {
          consume: (options) =>
            port.consume({
              ...options,
              onBatch: async (batch) => {
                await beforeBatch(spec.file);
                return options.onBatch(batch);
              },
            }),
          endOffsets: (topics) => port.endOffsets(topics),
          topicIds: (topics) => port.topicIds(topics),
        },
        groupId: spec.groupId,
        topics,
        roles,
        writer,
        ...(spec.onFetched === undefined ? {} : { onFetched: spec.onFetched }),
        logger,
        onBatch: ({ topic, partition, outcome }) => {
          if (outcome.nextOffset !== null) positions.set(offsetKey(topic, partition), outcome.nextOffset);
          spec.onBatch(topic, partition, outcome);
        },
        onUnreadable: (batch) => spec.onUnreadable?.(batch),
        // as the service's threads: the skips recorded in the model's data directory
        operatorSkips: () => new ModelFiles(dirname(spec.file)).operatorSkips(),
        acceptedLosses: () => new ModelFiles(dirname(spec.file)).acceptedLosses(),
      });
      return {
        positions: () => positions,
        failed: consumption.failed.then((error) => {
          close();
          return error;
        }),
        pause: () => consumption.pause(),
        stop: async () => {
          await consumption.stop();
          close();
        },
      };
    } catch (error) {
      close();
      throw error;
    }
  };
}

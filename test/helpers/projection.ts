/** The projection loop over the real broker, run in the test's thread until the model has reached the end offsets. */
import { pino } from 'pino';
import { inject } from 'vitest';
import type { TopicRole } from '../../schemas/events.js';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/consumer/projector.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { openReadModel, type ReadModelDatabase } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { uniqueTopicName, waitUntil } from './kafka.js';

/** Projects the topics into `file` until every partition is applied; returns the open model. */
export async function projectUntilCaughtUp(
  topics: Record<TopicRole, string>,
  file: string,
): Promise<ReadModelDatabase> {
  const logger = pino({ level: 'silent' });
  const db = openReadModel(file);
  const writer = new ReadModelWriter(db, roleOfTopic(topics));
  const port = kafkajsPort({
    brokers: inject('kafkaBrokers').split(','),
    clientId: 'projection-test',
    sessionTimeoutMs: 6000,
    logger,
  });
  const consumption = await runProjection({
    port,
    groupId: uniqueTopicName('projection'),
    topics,
    writer,
    logger,
  });
  try {
    await waitUntil(
      'the model has caught up',
      async () =>
        (await port.endOffsets(Object.values(topics))).every(
          (p) => (writer.storedOffset(p.topic, p.partition) ?? p.start) >= p.end,
        ),
      110_000,
    );
  } finally {
    await consumption.stop();
    await port.close();
  }
  return db;
}

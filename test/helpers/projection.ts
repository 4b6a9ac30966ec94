/**
 * The projection loop over the real broker, run in the test's thread until the model has reached the
 * end offsets. A consumer that fails is started again from the model's stored positions, as the
 * service's supervisor does; each failure is printed, and so is what the wait saw if it times out.
 */
import { pino } from 'pino';
import { inject } from 'vitest';
import type { TopicRole } from '../../schemas/streams.js';
import { roleOfTopic } from '../../src/config.js';
import { runProjection } from '../../src/projector/projector.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import type { Consumption } from '../../src/kafka/port.js';
import { openOneFileModel, type ReadModelDatabase } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { uniqueTopicName, waitUntil } from './kafka.js';

/** More failures than this in one wait fail the test: a restart must make progress. */
const maxRestarts = 5;

/** Projects the topics into `file` until every partition is applied; returns the open model. */
export async function projectUntilCaughtUp(
  topics: Record<TopicRole, string>,
  file: string,
): Promise<ReadModelDatabase> {
  // Warnings and errors of the projector and of kafkajs are kept for the report of a failed wait.
  const logged: string[] = [];
  const logger = pino(
    { level: 'warn' },
    { write: (line: string) => void logged.push(line.trim().slice(0, 500)) },
  );
  // every topic into one file: the orders model's tables and the keys store's
  const db = openOneFileModel(file);
  const writer = new ReadModelWriter(db, roleOfTopic(topics));
  const port = kafkajsPort({
    brokers: inject('kafkaBrokers').split(','),
    clientId: 'projection-test',
    sessionTimeoutMs: 6000,
    logger,
  });
  const groupId = uniqueTopicName('projection');
  const start = (): Promise<Consumption> => runProjection({ port, groupId, topics, writer, logger });
  let consumption = await start();
  let restarts = 0;
  let restarting: Promise<void> = Promise.resolve();
  const watch = (current: Consumption): void => {
    void current.failed.then((error) => {
      restarts += 1;
      console.log(
        `[projection] the consumer failed (${error.message}); restart ${restarts} from the stored positions`,
      );
      if (restarts > maxRestarts) return;
      restarting = current
        .stop()
        .catch(() => undefined)
        .then(start)
        .then((next) => {
          consumption = next;
          watch(next);
        });
    });
  };
  watch(consumption);
  const applied = async (): Promise<string[]> =>
    (await port.endOffsets(Object.values(topics)))
      .filter((p) => (writer.storedOffset(p.topic, p.partition) ?? p.start) < p.end)
      .map((p) => `${p.topic}[${p.partition}] at ${writer.storedOffset(p.topic, p.partition)} of ${p.end}`);
  try {
    await waitUntil(
      'the model has caught up',
      async () => {
        if (restarts > maxRestarts) throw new Error(`the consumer failed ${restarts} times`);
        return (await applied()).length === 0;
      },
      110_000,
    );
  } catch (error) {
    console.log(`[projection] behind: ${(await applied()).join(', ')}\n${logged.slice(-40).join('\n')}`);
    throw error;
  } finally {
    await restarting;
    await consumption.stop();
    await port.close();
  }
  return db;
}

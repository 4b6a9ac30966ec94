/**
 * The projector's thread: it owns the Kafka consumer and the model's only
 * write connection, so applying batches (synchronous SQLite transactions)
 * never blocks the event loop that answers API requests.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Kafka } from 'kafkajs';
import { roleOfTopic, type ServiceConfig } from '../config.js';
import { createLogger, kafkaLogCreator } from '../logger.js';
import { openReadModel } from '../read-model/database.js';
import { ReadModelWriter } from '../read-model/writer.js';
import { startProjector } from './projector.js';
import type { FromProjectorThread, ToProjectorThread } from './projector-thread.js';

const { file, config } = workerData as { file: string; config: ServiceConfig };
const port = parentPort;
if (port === null) throw new Error('projector-worker must run as a worker thread');
const post = (message: FromProjectorThread): void => port.postMessage(message);

const logger = createLogger(config.logLevel).child({ component: 'projector' });

/**
 * Requests come first: when both want more CPU than there is, the thread answering them wins and
 * the projector catches up with what is left (lag is what /readyz watches). Linux gives each
 * thread its own nice value; elsewhere the thread keeps the process's priority.
 */
const PROJECTOR_THREAD_NICE = 5;
try {
  const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
  setPriority(threadId, PROJECTOR_THREAD_NICE);
} catch (error) {
  logger.debug({ err: error }, 'the projector thread keeps the process priority');
}
const db = openReadModel(file);
const writer = new ReadModelWriter(db, roleOfTopic(config.topics));
const kafka = new Kafka({
  clientId: config.kafka.clientId,
  brokers: config.kafka.brokers,
  logCreator: kafkaLogCreator(logger),
});

const projector = await startProjector({
  kafka,
  groupId: config.kafka.groupId,
  sessionTimeoutMs: config.kafka.sessionTimeoutMs,
  topics: config.topics,
  writer,
  logger,
  onBatch: ({ topic, partition, outcome }) => post({ type: 'batch', topic, partition, outcome }),
});
post({ type: 'started', offsets: writer.storedOffsets() });

port.on('message', (message: ToProjectorThread) => {
  switch (message.type) {
    case 'pause':
      projector.consumer.pause(Object.values(config.topics).map((topic) => ({ topic })));
      return;
    case 'stop':
      void projector
        .stop()
        .catch((error: unknown) => logger.error({ err: error }, 'stopping the consumer'))
        .finally(() => {
          db.close();
          post({ type: 'stopped' });
          port.close();
        });
      return;
  }
});

/**
 * Wires the service together: read model, projector and HTTP server. Only this
 * module (through main) creates the Kafka client, the database handles and the app.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kafka } from 'kafkajs';
import type { FastifyInstance } from 'fastify';
import { roleOfTopic, type ServiceConfig } from './config.js';
import { startProjector, type Projector } from './consumer/projector.js';
import { buildApp } from './http/app.js';
import { kafkaLogCreator, type Logger } from './logger.js';
import { openReadModel } from './read-model/database.js';
import { ReadModelReader } from './read-model/reader.js';
import { ReadModelWriter } from './read-model/writer.js';

export interface RunningService {
  app: FastifyInstance;
  projector: Projector;
  /** Stops accepting requests, finishes in-flight ones, stops the consumer, closes the database. */
  close(): Promise<void>;
}

export class MissingTopicsError extends Error {
  readonly code = 'TOPICS_MISSING';
}

export async function startService(config: ServiceConfig, logger: Logger): Promise<RunningService> {
  mkdirSync(dirname(config.databasePath), { recursive: true });
  const writeDb = openReadModel(config.databasePath);
  const readDb = openReadModel(config.databasePath, { readonly: true });
  const writer = new ReadModelWriter(writeDb, roleOfTopic(config.topics));
  const reader = new ReadModelReader(readDb);

  const kafka = new Kafka({
    clientId: config.kafka.clientId,
    brokers: config.kafka.brokers,
    logCreator: kafkaLogCreator(logger),
  });
  await assertTopicsExist(kafka, Object.values(config.topics));

  const app = await buildApp({ reader, logger });
  await app.listen({ host: config.http.host, port: config.http.port });

  const projector = await startProjector({
    kafka,
    groupId: config.kafka.groupId,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    topics: config.topics,
    writer,
    logger: logger.child({ component: 'projector' }),
  });
  logger.info(
    { groupId: config.kafka.groupId, topics: config.topics, database: config.databasePath },
    'service started',
  );

  return {
    app,
    projector,
    close: async () => {
      await app.close();
      await projector.stop();
      writeDb.close();
      readDb.close();
    },
  };
}

async function assertTopicsExist(kafka: Kafka, topics: readonly string[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length > 0) {
      throw new MissingTopicsError(
        `Topics missing on the broker: ${missing.join(', ')}. Create them (see README, "Topics") or set TOPIC_* to the names in use.`,
      );
    }
  } finally {
    await admin.disconnect();
  }
}

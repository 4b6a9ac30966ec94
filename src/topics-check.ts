/**
 * The Kafka port at start-up: the service refuses to start when a topic it reads does not exist, and
 * serves the model on disk when the broker does not answer.
 */
import type { ServiceConfig } from './config.js';
import { kafkaPortOf } from './kafka/client.js';
import type { KafkaPort } from './kafka/port.js';
import type { Logger } from './logger.js';

export class MissingTopicsError extends Error {
  readonly code = 'TOPICS_MISSING';
}

/** The Kafka port, once the topics are known to exist (or the broker did not answer). */
export async function connectedPort(config: ServiceConfig, logger: Logger): Promise<KafkaPort> {
  const kafka = kafkaPortOf(config, logger);
  try {
    await assertTopicsExist(kafka, Object.values(config.topics));
  } catch (error) {
    if (error instanceof MissingTopicsError) {
      await kafka.close();
      throw error;
    }
    // An unreachable broker is no reason to refuse to serve the model on disk: the supervisor keeps
    // trying to start the projector, and /readyz says why it is down.
    logger.warn({ err: error }, 'the broker did not answer at start-up; serving the model on disk meanwhile');
  }
  return kafka;
}

async function assertTopicsExist(kafka: KafkaPort, topics: readonly string[]): Promise<void> {
  const existing = new Set(await kafka.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length > 0) {
    throw new MissingTopicsError(
      `Topics missing on the broker: ${missing.join(', ')}. Create them (npm run cli -- topics create) or set TOPIC_* to the names in use.`,
    );
  }
}

/** The service's Kafka port from its configuration: the one place that chooses the adapter. */
import { requireBrokers, type ServiceConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { kafkajsPort } from './kafkajs-adapter.js';
import type { KafkaPort } from './port.js';

export function kafkaPortOf(config: ServiceConfig, logger: Logger): KafkaPort {
  return kafkajsPort({
    brokers: requireBrokers(config),
    clientId: config.kafka.clientId,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    compression: config.kafka.compression,
    maxInflatedBatchBytes: config.limits.batchInflatedBytes,
    logger,
  });
}

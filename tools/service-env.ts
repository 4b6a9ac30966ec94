/** The environment that runs this service's executable on loopback, for code that starts it (tests, benchmarks). */
import { topicVariables, type TopicRole } from '../schemas/streams.js';

export function loopbackServiceEnv(options: {
  brokers: string;
  groupId: string;
  topics: Record<TopicRole, string>;
  dataDir: string;
  httpPort?: number;
  adminPort?: number;
  logLevel?: string;
}): NodeJS.ProcessEnv {
  return {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    KAFKA_BROKERS: options.brokers,
    KAFKA_GROUP_ID: options.groupId,
    ...topicVariables(options.topics),
    DATA_DIR: options.dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: String(options.httpPort ?? 0),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(options.adminPort ?? 0),
    LOG_LEVEL: options.logLevel ?? 'info',
  };
}

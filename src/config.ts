import { hostname } from 'node:os';
import { ServiceEnv } from '../schemas/config.js';
import type { TopicRole } from '../schemas/events.js';

export interface ServiceConfig {
  kafka: { brokers: string[]; clientId: string; groupId: string; sessionTimeoutMs: number };
  topics: Record<TopicRole, string>;
  databasePath: string;
  http: { host: string; port: number };
  logLevel: ServiceEnv['LOG_LEVEL'];
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
}

/** Parses the environment once; every problem is listed in one error. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceConfig {
  const parsed = ServiceEnv.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  const e = parsed.data;
  return {
    kafka: {
      brokers: e.KAFKA_BROKERS,
      clientId: e.KAFKA_CLIENT_ID,
      groupId: e.KAFKA_GROUP_ID ?? `orders-read-model-${hostname()}`,
      sessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS,
    },
    topics: {
      orders: e.TOPIC_ORDERS,
      orderStatus: e.TOPIC_ORDER_STATUS,
      articles: e.TOPIC_ARTICLES,
      apiKeys: e.TOPIC_API_KEYS,
    },
    databasePath: e.DATABASE_PATH,
    http: { host: e.HTTP_HOST, port: e.HTTP_PORT },
    logLevel: e.LOG_LEVEL,
  };
}

export function roleOfTopic(topics: Record<TopicRole, string>): (topic: string) => TopicRole | undefined {
  const byName = new Map(Object.entries(topics).map(([role, name]) => [name, role as TopicRole]));
  return (topic) => byName.get(topic);
}

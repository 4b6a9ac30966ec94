import { hostname } from 'node:os';
import { ServiceEnv } from '../schemas/config.js';
import { defaultTopicNames, type TopicRole } from '../schemas/events.js';

export interface ServiceConfig {
  /** empty when KAFKA_BROKERS is unset: commands that need Kafka refuse to run then */
  kafka: {
    brokers: string[];
    clientId: string;
    groupId: string;
    sessionTimeoutMs: number;
    compression: ServiceEnv['KAFKA_COMPRESSION'];
  };
  topics: Record<TopicRole, string>;
  dataDir: string;
  http: { host: string; port: number };
  admin: { host: string; port: number };
  health: { readyMaxLag: number; stallTimeoutMs: number; lagCheckIntervalMs: number };
  /** a candidate's projector gives way to requests (`consumer/pacing.ts`) */
  rebuild: { workShare: number };
  rateLimit: { max: number; windowMs: number };
  /** size bounds of what the topics deliver */
  limits: { batchInflatedBytes: number; messageBytes: number };
  logLevel: ServiceEnv['LOG_LEVEL'];
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
}

/** Parses the environment once; every problem is listed in one error. */
export function loadConfig(env: NodeJS.ProcessEnv): ServiceConfig {
  const parsed = ServiceEnv.safeParse(env);
  const problems = [
    ...(parsed.success
      ? []
      : parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`)),
    ...topicClashes(env).map((clash) => `  ${clash}`),
    ...(parsed.success ? portClashes(parsed.data) : []).map((clash) => `  ${clash}`),
    ...(parsed.success && parsed.data.MESSAGE_MAX_BYTES > parsed.data.BATCH_MAX_INFLATED_BYTES
      ? ['  MESSAGE_MAX_BYTES: larger than BATCH_MAX_INFLATED_BYTES, which no message can pass']
      : []),
  ];
  if (!parsed.success || problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  const e = parsed.data;
  return {
    kafka: {
      brokers: e.KAFKA_BROKERS ?? [],
      clientId: e.KAFKA_CLIENT_ID,
      groupId: e.KAFKA_GROUP_ID ?? `orders-read-model-${hostname()}`,
      sessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS,
      compression: e.KAFKA_COMPRESSION,
    },
    topics: {
      orders: e.TOPIC_ORDERS,
      orderStatus: e.TOPIC_ORDER_STATUS,
      articles: e.TOPIC_ARTICLES,
      apiKeys: e.TOPIC_API_KEYS,
    },
    dataDir: e.DATA_DIR,
    http: { host: e.HTTP_HOST, port: e.HTTP_PORT },
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT },
    health: {
      readyMaxLag: e.READY_MAX_LAG,
      stallTimeoutMs: e.STALL_TIMEOUT_MS,
      lagCheckIntervalMs: e.LAG_CHECK_INTERVAL_MS,
    },
    rebuild: { workShare: e.REBUILD_WORK_SHARE },
    rateLimit: { max: e.RATE_LIMIT_MAX, windowMs: e.RATE_LIMIT_WINDOW_MS },
    limits: { batchInflatedBytes: e.BATCH_MAX_INFLATED_BYTES, messageBytes: e.MESSAGE_MAX_BYTES },
    logLevel: e.LOG_LEVEL,
  };
}

/** The API and the admin listener on one port: the second listen would fail at start. */
function portClashes(e: ServiceEnv): string[] {
  return e.HTTP_PORT !== 0 && e.HTTP_PORT === e.ADMIN_PORT
    ? [`HTTP_PORT, ADMIN_PORT: the API and the admin listener cannot share port ${e.HTTP_PORT}`]
    : [];
}

/** One topic named for two roles would dead-letter every event of one of them as wrong_topic. */
function topicClashes(env: NodeJS.ProcessEnv): string[] {
  const variables = {
    TOPIC_ORDERS: defaultTopicNames.orders,
    TOPIC_ORDER_STATUS: defaultTopicNames.orderStatus,
    TOPIC_ARTICLES: defaultTopicNames.articles,
    TOPIC_API_KEYS: defaultTopicNames.apiKeys,
  };
  const byTopic = new Map<string, string[]>();
  for (const [name, fallback] of Object.entries(variables)) {
    const topic = env[name] === undefined || env[name] === '' ? fallback : env[name];
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), name]);
  }
  return [...byTopic]
    .filter(([, names]) => names.length > 1)
    .map(
      ([topic, names]) =>
        `${names.join(', ')}: name the same topic '${topic}'; each role needs a topic of its own`,
    );
}

export function roleOfTopic(topics: Record<TopicRole, string>): (topic: string) => TopicRole | undefined {
  const byName = new Map(Object.entries(topics).map(([role, name]) => [name, role as TopicRole]));
  return (topic) => byName.get(topic);
}

/** The broker list, or a ConfigError saying that this command needs one. */
export function requireBrokers(config: ServiceConfig): string[] {
  if (config.kafka.brokers.length === 0) {
    throw new ConfigError('KAFKA_BROKERS is required for this command: a comma-separated list of host:port');
  }
  return config.kafka.brokers;
}

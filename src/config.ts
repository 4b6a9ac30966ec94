import { hostname } from 'node:os';
import { type ServiceEnv, serviceEnvSchema } from '../schemas/config.js';
import { perStream, streamRoles, streams, type TopicRole } from '../schemas/streams.js';

/** The bounds of waiting requests (`Prefer: wait=N`; `http/change-waits.ts`). */
export interface WaitSettings {
  /** the longest wait applied, in seconds (WAIT_MAX_SECONDS); 0: no request waits */
  maxSeconds: number;
  /** held requests of one API key at once, over every request thread (WAIT_MAX_PER_KEY) */
  perKey: number;
  /** held requests at once, over every request thread (WAIT_MAX_REQUESTS) */
  total: number;
}

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
  /** `readPositionWaitMs`: how long a request waits for the position it presents (`http/position.ts`) */
  http: {
    host: string;
    port: number;
    workers: number;
    readPositionWaitMs: number;
    /** waiting requests' bounds (`http/change-waits.ts`) */
    waits: WaitSettings;
  };
  admin: { host: string; port: number };
  health: { readyMaxLag: number; stallTimeoutMs: number; lagCheckIntervalMs: number; keysStallMs: number };
  /** a candidate's projector gives way to requests (`projector/pacing.ts`) */
  candidates: { workShare: number };
  /** catching up by replay when far behind (`lifecycle/catch-up.ts`); `minLag` null: never */
  catchUp: { minLag: number | null; minShare: number };
  rateLimit: { max: number; windowMs: number };
  /** size bounds of what the topics deliver */
  limits: { batchInflatedBytes: number; messageBytes: number };
  logLevel: ServiceEnv['LOG_LEVEL'];
  /** null: no tracing, and nothing of OpenTelemetry is loaded (`tracing/tracing.ts`) */
  tracing: TracingConfig | null;
}

/** What the OTEL_* variables ask of tracing, once it is on (README, "Tracing"). */
export interface TracingConfig {
  exporters: readonly ('otlp' | 'console')[];
  /** where OTLP/HTTP (protobuf) exports spans */
  otlpTracesUrl: string;
  /** resource attributes, `service.name` included */
  resource: Record<string, string>;
  sampler: NonNullable<ServiceEnv['OTEL_TRACES_SAMPLER']>;
  /** the ratio of the traceidratio samplers */
  samplerRatio: number;
  batch: {
    scheduledDelayMillis: number;
    exportTimeoutMillis: number;
    maxQueueSize: number;
    maxExportBatchSize: number;
  };
  /** an incoming W3C `traceparent` makes the request's span its child */
  traceContext: boolean;
}

export const defaultServiceName = 'orders-read-model';

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
}

/** Variables renamed, by their former name: a former name still sets its variable when that is unset. */
export const formerNames = { REBUILD_WORK_SHARE: 'CANDIDATE_WORK_SHARE' } as const;

/** The former names `env` sets, each with its new name, for a warning at start. */
export function formerNamesUsed(env: NodeJS.ProcessEnv): { former: string; now: string }[] {
  return Object.entries(formerNames)
    .filter(([former]) => env[former] !== undefined)
    .map(([former, now]) => ({ former, now }));
}

/** `env` with each former name read as its new one; both set to different values is a clash. */
function withFormerNames(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; clashes: string[] } {
  const renamed = { ...env };
  const clashes: string[] = [];
  for (const { former, now } of formerNamesUsed(env)) {
    if (env[now] === undefined) renamed[now] = env[former];
    else if (env[now] !== env[former])
      clashes.push(`${former}: the former name of ${now}, which is set to another value; unset ${former}`);
  }
  return { env: renamed, clashes };
}

/** Parses the environment once; every problem is listed in one error. */
export function loadConfig(given: NodeJS.ProcessEnv): ServiceConfig {
  const { env, clashes } = withFormerNames(given);
  const parsed = serviceEnvSchema().safeParse(env);
  const problems = [
    ...(parsed.success
      ? []
      : parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`)),
    ...clashes.map((clash) => `  ${clash}`),
    ...topicClashes(env).map((clash) => `  ${clash}`),
    ...(parsed.success ? portClashes(parsed.data) : []).map((clash) => `  ${clash}`),
    ...(parsed.success ? tracingClashes(parsed.data) : []).map((clash) => `  ${clash}`),
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
    topics: perStream((role) => e[streams[role].variable]),
    dataDir: e.DATA_DIR,
    http: {
      host: e.HTTP_HOST,
      port: e.HTTP_PORT,
      workers: e.HTTP_WORKERS,
      readPositionWaitMs: e.READ_POSITION_WAIT_MS,
      waits: { maxSeconds: e.WAIT_MAX_SECONDS, perKey: e.WAIT_MAX_PER_KEY, total: e.WAIT_MAX_REQUESTS },
    },
    admin: { host: e.ADMIN_HOST, port: e.ADMIN_PORT },
    health: {
      readyMaxLag: e.READY_MAX_LAG,
      stallTimeoutMs: e.STALL_TIMEOUT_MS,
      lagCheckIntervalMs: e.LAG_CHECK_INTERVAL_MS,
      keysStallMs: e.KEYS_STALL_MS,
    },
    candidates: { workShare: e.CANDIDATE_WORK_SHARE },
    catchUp: {
      minLag: e.CATCH_UP_REPLAY_MIN_LAG === 'off' ? null : e.CATCH_UP_REPLAY_MIN_LAG,
      minShare: e.CATCH_UP_REPLAY_MIN_SHARE,
    },
    rateLimit: { max: e.RATE_LIMIT_MAX, windowMs: e.RATE_LIMIT_WINDOW_MS },
    limits: { batchInflatedBytes: e.BATCH_MAX_INFLATED_BYTES, messageBytes: e.MESSAGE_MAX_BYTES },
    logLevel: e.LOG_LEVEL,
    tracing: tracingOf(e),
  };
}

/**
 * Tracing is on once an exporter is asked for: an OTLP endpoint, or OTEL_TRACES_EXPORTER naming one.
 * The specification's default exporter is otlp to localhost; here nothing set means no tracing at
 * all, so that a service nobody asked to trace sends nothing and loads nothing.
 */
function tracingOf(e: ServiceEnv): TracingConfig | null {
  if (e.OTEL_SDK_DISABLED === true) return null;
  const endpoint = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporters = (e.OTEL_TRACES_EXPORTER ?? (endpoint === undefined ? [] : ['otlp'])).filter(
    (name) => name !== 'none',
  );
  if (exporters.length === 0) return null;
  const { 'service.name': namedInAttributes, ...attributes } = e.OTEL_RESOURCE_ATTRIBUTES ?? {};
  const sampler = e.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  return {
    exporters,
    otlpTracesUrl:
      e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      (e.OTEL_EXPORTER_OTLP_ENDPOINT === undefined
        ? 'http://localhost:4318/v1/traces'
        : `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/traces`),
    resource: {
      ...attributes,
      'service.name': e.OTEL_SERVICE_NAME ?? namedInAttributes ?? defaultServiceName,
    },
    sampler,
    samplerRatio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
    batch: {
      scheduledDelayMillis: e.OTEL_BSP_SCHEDULE_DELAY ?? 5000,
      exportTimeoutMillis: e.OTEL_BSP_EXPORT_TIMEOUT ?? 30_000,
      maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE ?? 2048,
      maxExportBatchSize: e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? 512,
    },
    traceContext: (e.OTEL_PROPAGATORS ?? ['tracecontext']).includes('tracecontext'),
  };
}

/** Combinations of OTEL_* values that no reading makes sense of. */
function tracingClashes(e: ServiceEnv): string[] {
  const clashes: string[] = [];
  const exporters = e.OTEL_TRACES_EXPORTER ?? [];
  if (exporters.includes('none') && exporters.length > 1) {
    clashes.push('OTEL_TRACES_EXPORTER: none cannot be listed with an exporter');
  }
  const propagators = e.OTEL_PROPAGATORS ?? [];
  if (propagators.includes('none') && propagators.length > 1) {
    clashes.push('OTEL_PROPAGATORS: none cannot be listed with a propagator');
  }
  if ((e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE ?? 512) > (e.OTEL_BSP_MAX_QUEUE_SIZE ?? 2048)) {
    clashes.push('OTEL_BSP_MAX_EXPORT_BATCH_SIZE: larger than OTEL_BSP_MAX_QUEUE_SIZE');
  }
  return clashes;
}

/** The API and the admin listener on one port: the second listen would fail at start. */
function portClashes(e: ServiceEnv): string[] {
  return e.HTTP_PORT !== 0 && e.HTTP_PORT === e.ADMIN_PORT
    ? [`HTTP_PORT, ADMIN_PORT: the API and the admin listener cannot share port ${e.HTTP_PORT}`]
    : [];
}

/** One topic named for two roles would dead-letter every event of one of them as wrong_topic. */
function topicClashes(env: NodeJS.ProcessEnv): string[] {
  const byTopic = new Map<string, string[]>();
  for (const { variable: name, defaultTopic } of streamRoles.map((role) => streams[role])) {
    const topic = env[name] === undefined || env[name] === '' ? defaultTopic : env[name];
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

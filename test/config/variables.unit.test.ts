import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  loadConfig,
  requireBrokers,
  roleOfTopic,
  type ServiceConfig,
} from '../../src/config.js';
import { streamRoles, streams } from '../../schemas/streams.js';

/** The message of the one problem `env` has, or undefined when it loads. */
function problemOf(env: Record<string, string>): string | undefined {
  try {
    loadConfig(env);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    return (error as Error).message;
  }
}

const tracingOn = { OTEL_TRACES_EXPORTER: 'console' };

interface NumberCase {
  name: string;
  read: (config: ServiceConfig) => number | undefined;
  byDefault: number;
  /** values accepted, each read back as the number it writes */
  accepted: string[];
  refused: string[];
  /** variables set beside it (tracing on, a queue large enough) */
  with?: Record<string, string>;
}

const numbers: NumberCase[] = [
  {
    name: 'KAFKA_SESSION_TIMEOUT_MS',
    read: (c) => c.kafka.sessionTimeoutMs,
    byDefault: 10_000,
    accepted: ['1000'],
    refused: ['999'],
  },
  {
    name: 'HTTP_PORT',
    read: (c) => c.http.port,
    byDefault: 8080,
    accepted: ['1', '65535'],
    refused: ['65536'],
  },
  { name: 'ADMIN_PORT', read: (c) => c.admin.port, byDefault: 9464, accepted: ['65535'], refused: ['65536'] },
  {
    name: 'HTTP_WORKERS',
    read: (c) => c.http.workers,
    byDefault: 1,
    accepted: ['1', '64'],
    refused: ['0', '65'],
  },
  {
    name: 'READY_MAX_LAG',
    read: (c) => c.health.readyMaxLag,
    byDefault: 1000,
    accepted: ['0', String(Number.MAX_SAFE_INTEGER)],
    refused: ['-1', '1.5', '9007199254740992'],
  },
  {
    name: 'READ_POSITION_WAIT_MS',
    read: (c) => c.http.readPositionWaitMs,
    byDefault: 1000,
    accepted: ['0', '2147483647'],
    refused: ['2147483648'],
  },
  {
    name: 'WAIT_MAX_SECONDS',
    read: (c) => c.http.waits.maxSeconds,
    byDefault: 60,
    accepted: ['0', '3600'],
    refused: ['-1', '3601', '1.5'],
  },
  {
    name: 'WAIT_MAX_PER_KEY',
    read: (c) => c.http.waits.perKey,
    byDefault: 10,
    accepted: ['1', '100000'],
    refused: ['0', '100001'],
  },
  {
    name: 'WAIT_MAX_REQUESTS',
    read: (c) => c.http.waits.total,
    byDefault: 1000,
    accepted: ['1', '1000000'],
    refused: ['0', '1000001'],
  },
  {
    name: 'STALL_TIMEOUT_MS',
    read: (c) => c.health.stallTimeoutMs,
    byDefault: 30_000,
    accepted: ['1'],
    refused: ['0'],
  },
  {
    name: 'LAG_CHECK_INTERVAL_MS',
    read: (c) => c.health.lagCheckIntervalMs,
    byDefault: 2000,
    accepted: ['1'],
    refused: ['0'],
  },
  {
    name: 'KEYS_STALL_MS',
    read: (c) => c.health.keysStallMs,
    byDefault: 3000,
    accepted: ['1', '2147483647'],
    refused: ['0', '2147483648'],
  },
  {
    name: 'RATE_LIMIT_MAX',
    read: (c) => c.rateLimit.max,
    byDefault: 0,
    accepted: ['0', '4000000'],
    refused: ['4000001'],
  },
  {
    name: 'RATE_LIMIT_WINDOW_MS',
    read: (c) => c.rateLimit.windowMs,
    byDefault: 60_000,
    accepted: ['1'],
    refused: ['0'],
  },
  {
    name: 'BATCH_MAX_INFLATED_BYTES',
    read: (c) => c.limits.batchInflatedBytes,
    byDefault: 4 * 1024 * 1024,
    accepted: ['1048576'],
    refused: ['1048575'],
    with: { MESSAGE_MAX_BYTES: '1024' },
  },
  {
    name: 'MESSAGE_MAX_BYTES',
    read: (c) => c.limits.messageBytes,
    byDefault: 1024 * 1024,
    accepted: ['1024', '4194304'],
    refused: ['1023', '4194305'],
  },
  {
    name: 'CANDIDATE_WORK_SHARE',
    read: (c) => c.candidates.workShare,
    byDefault: 0.25,
    accepted: ['0.05', '1', '0.5', '00.5'],
    refused: ['0.04', '1.01', '.5', '1.'],
  },
  {
    name: 'CATCH_UP_REPLAY_MIN_LAG',
    read: (c) => c.catchUp.minLag ?? undefined,
    byDefault: 1_000_000,
    accepted: ['1', '9007199254740991'],
    refused: ['0', 'never', '-1', '1e6'],
  },
  {
    name: 'CATCH_UP_REPLAY_MIN_SHARE',
    read: (c) => c.catchUp.minShare,
    byDefault: 0.6,
    accepted: ['0', '1', '0.25'],
    refused: ['1.01', '.5', '-0.5'],
  },
  {
    name: 'OTEL_TRACES_SAMPLER_ARG',
    read: (c) => c.tracing?.samplerRatio,
    byDefault: 1,
    accepted: ['0', '0.5', '1'],
    refused: ['1.5'],
    with: tracingOn,
  },
  {
    name: 'OTEL_BSP_SCHEDULE_DELAY',
    read: (c) => c.tracing?.batch.scheduledDelayMillis,
    byDefault: 5000,
    accepted: ['0', '2147483647'],
    refused: ['2147483648'],
    with: tracingOn,
  },
  {
    name: 'OTEL_BSP_EXPORT_TIMEOUT',
    read: (c) => c.tracing?.batch.exportTimeoutMillis,
    byDefault: 30_000,
    accepted: ['1'],
    refused: ['0'],
    with: tracingOn,
  },
  {
    name: 'OTEL_BSP_MAX_QUEUE_SIZE',
    read: (c) => c.tracing?.batch.maxQueueSize,
    byDefault: 2048,
    accepted: ['512', '4096'],
    refused: ['0'],
    with: tracingOn,
  },
  {
    name: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE',
    read: (c) => c.tracing?.batch.maxExportBatchSize,
    byDefault: 512,
    accepted: ['1', '2048'],
    refused: ['0', '2049'],
    with: tracingOn,
  },
];

describe('each numeric variable: its default, its bounds, and its reading', () => {
  it.each(numbers)('$name', ({ name, read, byDefault, accepted, refused, with: beside = {} }) => {
    expect(read(loadConfig(beside))).toBe(byDefault);
    for (const value of accepted) {
      expect(read(loadConfig({ ...beside, [name]: value })), value).toBe(Number(value));
    }
    for (const value of refused) {
      expect(problemOf({ ...beside, [name]: value }), value).toMatch(new RegExp(`^  ${name}: `, 'm'));
    }
  });

  it('says how to write a number when one is written otherwise', () => {
    expect(problemOf({ HTTP_PORT: 'eighty' })).toContain(
      'HTTP_PORT: must be a decimal integer (digits only; unset the variable for its default)',
    );
    expect(problemOf({ CANDIDATE_WORK_SHARE: 'half' })).toContain(
      'CANDIDATE_WORK_SHARE: must be a decimal number such as 0.25 (unset the variable for its default)',
    );
    expect(problemOf({ STALL_TIMEOUT_MS: '2147483648' })).toContain(
      'STALL_TIMEOUT_MS: must be at most 2147483647 ms (about 24.8 days): Node runs a longer timer after 1 ms',
    );
    expect(problemOf({ ...tracingOn, OTEL_BSP_MAX_QUEUE_SIZE: '511' })).toContain(
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE: larger than OTEL_BSP_MAX_QUEUE_SIZE',
    );
    expect(problemOf({ MESSAGE_MAX_BYTES: '4194305' })).toContain(
      'MESSAGE_MAX_BYTES: larger than BATCH_MAX_INFLATED_BYTES, which no message can pass',
    );
  });
});

describe('the text variables', () => {
  it('read KAFKA_BROKERS as a trimmed list of host:port, and refuse anything else', () => {
    expect(loadConfig({}).kafka.brokers).toEqual([]);
    expect(loadConfig({ KAFKA_BROKERS: 'a:1' }).kafka.brokers).toEqual(['a:1']);
    expect(loadConfig({ KAFKA_BROKERS: ' kafka-1:9092 , 10.0.0.2:19092' }).kafka.brokers).toEqual([
      'kafka-1:9092',
      '10.0.0.2:19092',
    ]);
    for (const value of [
      '',
      'kafka',
      'kafka:',
      ':9092',
      'kafka:9092,',
      'a b:1',
      'x:kafka:9092',
      'kafka:9092x',
    ]) {
      expect(problemOf({ KAFKA_BROKERS: value }), value).toMatch(/^ {2}KAFKA_BROKERS(\.\d+)?: /m);
    }
    expect(problemOf({ KAFKA_BROKERS: 'kafka' })).toContain('each broker must be host:port');
  });

  it('take their defaults, and refuse an empty value', () => {
    const config = loadConfig({});
    expect(config.kafka).toMatchObject({
      clientId: 'orders-read-model',
      groupId: `orders-read-model-${hostname()}`,
      compression: 'none',
    });
    expect(config.dataDir).toBe('data');
    expect(config.http.host).toBe('0.0.0.0');
    expect(config.admin.host).toBe('0.0.0.0');
    expect(config.logLevel).toBe('info');
    expect(loadConfig({ KAFKA_GROUP_ID: 'replica-1' }).kafka.groupId).toBe('replica-1');
    for (const name of [
      'KAFKA_CLIENT_ID',
      'KAFKA_GROUP_ID',
      // every declared stream's variable, from the registry
      ...streamRoles.map((role) => streams[role].variable),
      'DATA_DIR',
      'HTTP_HOST',
      'ADMIN_HOST',
    ]) {
      expect(problemOf({ [name]: '' }), name).toMatch(new RegExp(`^  ${name}: `, 'm'));
    }
  });

  it('take every named codec and log level, and refuse others', () => {
    for (const codec of ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const) {
      expect(loadConfig({ KAFKA_COMPRESSION: codec }).kafka.compression).toBe(codec);
    }
    expect(problemOf({ KAFKA_COMPRESSION: 'brotli' })).toMatch(/^ {2}KAFKA_COMPRESSION: /m);
    for (const level of ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const) {
      expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
    }
    expect(problemOf({ LOG_LEVEL: 'verbose' })).toMatch(/^ {2}LOG_LEVEL: /m);
  });
});

describe('the OpenTelemetry variables, read as the specification writes them', () => {
  it('read OTEL_SDK_DISABLED in any case, and an empty value as unset', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'True' }).tracing).toBeNull();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'FALSE' }).tracing).not.toBeNull();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: '' }).tracing).not.toBeNull();
    expect(problemOf({ OTEL_SDK_DISABLED: 'truely' })).toContain('OTEL_SDK_DISABLED: must be true or false');
    for (const value of ['no', 'untrue', 'false1']) {
      expect(problemOf({ OTEL_SDK_DISABLED: value }), value).toContain(
        'OTEL_SDK_DISABLED: must be true or false',
      );
    }
  });

  it('trim the names of a list, and name what it takes when one is unknown', () => {
    expect(loadConfig({ OTEL_TRACES_EXPORTER: ' console , otlp ' }).tracing?.exporters).toEqual([
      'console',
      'otlp',
    ]);
    expect(problemOf({ OTEL_TRACES_EXPORTER: 'zipkin' })).toContain(
      'each must be otlp, console or none (zipkin and jaeger are not supported here)',
    );
    expect(loadConfig({ ...tracingOn, OTEL_PROPAGATORS: ' baggage ' }).tracing?.traceContext).toBe(false);
    expect(
      loadConfig({ ...tracingOn, OTEL_PROPAGATORS: 'baggage, tracecontext' }).tracing?.traceContext,
    ).toBe(true);
    expect(loadConfig(tracingOn).tracing?.traceContext).toBe(true);
    expect(loadConfig({ ...tracingOn, OTEL_PROPAGATORS: 'none' }).tracing?.traceContext).toBe(false);
    expect(problemOf({ OTEL_PROPAGATORS: 'none,baggage' })).toBe(
      'Invalid configuration:\n  OTEL_PROPAGATORS: none cannot be listed with a propagator',
    );
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing?.exporters).toEqual(['otlp']);
    expect(problemOf({ OTEL_PROPAGATORS: 'b3' })).toContain('each must be tracecontext, baggage or none');
  });

  it('take http and https endpoints only, and the http/protobuf protocol only', () => {
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/v1/traces' }).tracing?.otlpTracesUrl,
    ).toBe('https://c/v1/traces');
    for (const value of ['ftp://c/traces', 'c:4318', 'not a url', 'xhttp://c']) {
      expect(problemOf({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: value }), value).toContain(
        'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http:// or https:// URL',
      );
    }
    expect(
      loadConfig({ ...tracingOn, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).tracing,
    ).not.toBeNull();
    expect(problemOf({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toContain(
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: only http/protobuf (OTLP/HTTP, port 4318) is supported here; grpc and http/json are not',
    );
  });

  it('take every sampler the specification names but jaeger_remote', () => {
    for (const sampler of [
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ] as const) {
      expect(loadConfig({ ...tracingOn, OTEL_TRACES_SAMPLER: sampler }).tracing?.sampler).toBe(sampler);
    }
    expect(loadConfig(tracingOn).tracing?.sampler).toBe('parentbased_always_on');
    expect(problemOf({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toContain(
      'must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio',
    );
  });

  it('read resource attributes as trimmed, percent-decoded key=value pairs, skipping empty ones', () => {
    const resource = (value: string) =>
      loadConfig({ ...tracingOn, OTEL_RESOURCE_ATTRIBUTES: value }).tracing?.resource;
    expect(resource(' a = x%2Cy ,, b=2, ')).toEqual({
      a: 'x,y',
      b: '2',
      'service.name': 'orders-read-model',
    });
    expect(resource('a=')).toEqual({ a: '', 'service.name': 'orders-read-model' });
    for (const value of ['=x', 'novalue', 'a=%E0%A4%A', ' =x']) {
      expect(problemOf({ OTEL_RESOURCE_ATTRIBUTES: value }), value).toContain(
        `OTEL_RESOURCE_ATTRIBUTES: '${value}' is not key=value (percent-encoded)`,
      );
    }
  });
});

describe('the problems of a configuration', () => {
  it('are listed one a line under one heading, and only those there are', () => {
    expect(problemOf({ HTTP_PORT: 'x', READY_MAX_LAG: '-1' })).toBe(
      [
        'Invalid configuration:',
        '  HTTP_PORT: must be a decimal integer (digits only; unset the variable for its default)',
        '  READY_MAX_LAG: must be a decimal integer (digits only; unset the variable for its default)',
      ].join('\n'),
    );
  });

  it('count an empty TOPIC_* as its default when looking for two roles on one topic', () => {
    expect(problemOf({ TOPIC_ORDERS: '', TOPIC_ARTICLES: 'pr.orders' })).toContain(
      "TOPIC_ORDERS, TOPIC_ARTICLES: name the same topic 'pr.orders'",
    );
  });
});

describe('what commands read of the configuration', () => {
  it('maps each topic name to its role, and no other name', () => {
    const roleOf = roleOfTopic(loadConfig({ TOPIC_ARTICLES: 'articles' }).topics);
    expect(roleOf('pr.orders')).toBe('orders');
    expect(roleOf('pr.order-status')).toBe('orderStatus');
    expect(roleOf('articles')).toBe('articles');
    expect(roleOf('pr.api-keys')).toBe('apiKeys');
    expect(roleOf('pr.articles')).toBeUndefined();
  });

  it('requires brokers of a command that needs Kafka, saying how to give them', () => {
    expect(requireBrokers(loadConfig({ KAFKA_BROKERS: 'a:1,b:2' }))).toEqual(['a:1', 'b:2']);
    expect(() => requireBrokers(loadConfig({}))).toThrow(ConfigError);
    expect(() => requireBrokers(loadConfig({}))).toThrow(
      'KAFKA_BROKERS is required for this command: a comma-separated list of host:port',
    );
  });
});

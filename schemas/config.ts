/** The service's configuration, read from environment variables (SCREAMING_CASE) once, in main. */
import { z } from 'zod';
import { streamRoles, streams, type TopicVariable } from './streams.js';

/** The longest delay a Node timer honours: setTimeout and setInterval run a longer one after 1 ms. */
export const maxTimerMs = 2_147_483_647;

/**
 * The schema of every variable. It is built on each call rather than at load so that what a test
 * pins down is evaluated in the test (mutation testing changes code only while a test runs);
 * `loadConfig` calls it once per process.
 */
export function serviceEnvSchema() {
  /**
   * Numbers are read as written, with no coercion: an empty value, a sign, spaces, hex or an exponent
   * is refused rather than read as 0 or as something else (unset a variable for its default).
   */
  const decimalInteger = z
    .string()
    .regex(/^\d+$/, 'must be a decimal integer (digits only; unset the variable for its default)')
    .transform(Number)
    .pipe(z.number().int().max(Number.MAX_SAFE_INTEGER));
  const decimalFraction = z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a decimal number such as 0.25 (unset the variable for its default)')
    .transform(Number);
  /** 1–65535; 0 asks the system for any free port (tests and tools). */
  const port = decimalInteger.pipe(z.number().max(65_535));
  const positiveInt = decimalInteger.pipe(z.number().positive());
  /** A duration in milliseconds that some timer waits for (every *_MS setting, and OTel's batch delays). */
  const timerMs = (schema: z.ZodType<number, string>) =>
    schema.pipe(
      z
        .number()
        .max(
          maxTimerMs,
          `must be at most ${maxTimerMs} ms (about 24.8 days): Node runs a longer timer after 1 ms`,
        ),
    );

  /**
   * OpenTelemetry's variables keep the meaning the OpenTelemetry specification gives them
   * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/): an empty value
   * is the same as an unset one. Values the specification allows but this service does not support
   * are refused with the reason, rather than ignored.
   */
  const otel = <T extends z.ZodType>(schema: T) =>
    z.preprocess((value) => (value === '' ? undefined : value), schema.optional());
  /** A comma-separated list of known names, trimmed. */
  const nameList = <const T extends readonly [string, ...string[]]>(names: T, message: string) =>
    z
      .string()
      .transform((value) => value.split(',').map((name) => name.trim()))
      .pipe(z.array(z.enum(names, { error: message })));
  const httpUrl = z
    .string()
    .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
      error: 'must be an http:// or https:// URL',
    });
  const otlpProtocol = z.literal('http/protobuf', {
    error: 'only http/protobuf (OTLP/HTTP, port 4318) is supported here; grpc and http/json are not',
  });
  /** `key=value,key=value`, values percent-decoded (W3C Baggage octets). */
  const resourceAttributes = z.string().transform((value, ctx) => {
    const attributes: Record<string, string> = {};
    for (const pair of value.split(',')) {
      if (pair.trim() === '') continue;
      const at = pair.indexOf('=');
      const key = pair.slice(0, at).trim();
      let decoded: string | undefined;
      try {
        decoded = at > 0 ? decodeURIComponent(pair.slice(at + 1).trim()) : undefined;
      } catch {
        decoded = undefined;
      }
      if (key === '' || decoded === undefined) {
        ctx.addIssue({ code: 'custom', message: `'${pair}' is not key=value (percent-encoded)` });
        return z.NEVER;
      }
      attributes[key] = decoded;
    }
    return attributes;
  });

  return z.object({
    KAFKA_BROKERS: z
      .string()
      .min(1)
      .transform((value) => value.split(',').map((broker) => broker.trim()))
      .pipe(z.array(z.string().regex(/^[^\s:]+:\d+$/, 'each broker must be host:port')).min(1))
      .optional(),
    KAFKA_CLIENT_ID: z.string().min(1).default('orders-read-model'),
    /** Unique per replica: every replica consumes every partition into its own file. */
    KAFKA_GROUP_ID: z.string().min(1).optional(),
    KAFKA_SESSION_TIMEOUT_MS: timerMs(decimalInteger.pipe(z.number().min(1000))).default(10_000),
    /** codec of what this service publishes (`keys issue`, `keys revoke`, `demo-data`); every codec is read */
    KAFKA_COMPRESSION: z.enum(['none', 'gzip', 'snappy', 'lz4', 'zstd']).default('none'),
    /** each stream's topic, in the variable its declaration names (`streams.ts`) */
    ...topicSchemas(),
    DATA_DIR: z.string().min(1).default('data'),
    HTTP_HOST: z.string().min(1).default('0.0.0.0'),
    HTTP_PORT: port.default(8080),
    /** threads answering the API on HTTP_PORT, each with its own read-only connections (docs/architecture.md, "Reads across cores") */
    HTTP_WORKERS: decimalInteger.pipe(z.number().min(1).max(64)).default(1),
    ADMIN_HOST: z.string().min(1).default('0.0.0.0'),
    ADMIN_PORT: port.default(9464),
    READY_MAX_LAG: decimalInteger.default(1000),
    /** how long a request presenting a position (X-Read-Position) waits for this replica to reach it; at most setTimeout's bound */
    READ_POSITION_WAIT_MS: decimalInteger.pipe(z.number().max(2_147_483_647)).default(1000),
    /** the longest a conditional request with `Prefer: wait=N` is held for a change, in seconds (`http/change-waits.ts`); 0: none is held */
    WAIT_MAX_SECONDS: decimalInteger.pipe(z.number().max(3600)).default(60),
    /** requests of one API key held at once, over every request thread; past it they are answered at once */
    WAIT_MAX_PER_KEY: decimalInteger.pipe(z.number().min(1).max(100_000)).default(10),
    /** requests held at once, over every request thread */
    WAIT_MAX_REQUESTS: decimalInteger.pipe(z.number().min(1).max(1_000_000)).default(1000),
    STALL_TIMEOUT_MS: timerMs(positiveInt).default(30_000),
    LAG_CHECK_INTERVAL_MS: timerMs(positiveInt).default(2000),
    /** the keys consumer must have fetched within this long for the replica to be ready; past it, it is replaced */
    KEYS_STALL_MS: timerMs(positiveInt).default(3000),
    /** while requests arrive, a candidate caught up before it is served works at most this share of the time; 1: never gives way */
    CANDIDATE_WORK_SHARE: decimalFraction.pipe(z.number().min(0.05).max(1)).default(0.25),
    /** a lag of at least this many messages (and CATCH_UP_REPLAY_MIN_SHARE of the log) is caught up by replay into a new model; off: never */
    CATCH_UP_REPLAY_MIN_LAG: z
      .union([z.literal('off'), decimalInteger.pipe(z.number().min(1))], {
        error: 'must be off or a decimal integer of at least 1',
      })
      .default(1_000_000),
    /** the least share of the order topics' messages that such a lag must be */
    CATCH_UP_REPLAY_MIN_SHARE: decimalFraction.pipe(z.number().min(0).max(1)).default(0.6),
    /** requests per API key per window; 0 turns the limit off */
    RATE_LIMIT_MAX: decimalInteger.pipe(z.number().max(4_000_000)).default(0),
    RATE_LIMIT_WINDOW_MS: timerMs(positiveInt).default(60_000),
    /** what one record batch may inflate to; a batch beyond it is paused and reported, never inflated */
    BATCH_MAX_INFLATED_BYTES: decimalInteger.pipe(z.number().min(1024 * 1024)).default(4 * 1024 * 1024),
    /** one message's value beyond this is dead-lettered (too_large) with its size, SHA-256 and a preview */
    MESSAGE_MAX_BYTES: decimalInteger.pipe(z.number().min(1024)).default(1024 * 1024),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** true: no tracing whatever else is set */
    OTEL_SDK_DISABLED: otel(
      z
        .string()
        .regex(/^(true|false)$/i, 'must be true or false')
        .transform((value) => value.toLowerCase() === 'true'),
    ),
    OTEL_TRACES_EXPORTER: otel(
      nameList(
        ['otlp', 'console', 'none'],
        'each must be otlp, console or none (zipkin and jaeger are not supported here)',
      ),
    ),
    OTEL_EXPORTER_OTLP_ENDPOINT: otel(httpUrl),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otel(httpUrl),
    OTEL_EXPORTER_OTLP_PROTOCOL: otel(otlpProtocol),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otel(otlpProtocol),
    OTEL_SERVICE_NAME: otel(z.string()),
    OTEL_RESOURCE_ATTRIBUTES: otel(resourceAttributes),
    OTEL_TRACES_SAMPLER: otel(
      z.enum(
        [
          'always_on',
          'always_off',
          'traceidratio',
          'parentbased_always_on',
          'parentbased_always_off',
          'parentbased_traceidratio',
        ],
        {
          error:
            'must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio',
        },
      ),
    ),
    OTEL_TRACES_SAMPLER_ARG: otel(decimalFraction.pipe(z.number().max(1))),
    OTEL_PROPAGATORS: otel(
      nameList(['tracecontext', 'baggage', 'none'], 'each must be tracecontext, baggage or none'),
    ),
    OTEL_BSP_SCHEDULE_DELAY: otel(timerMs(decimalInteger)),
    OTEL_BSP_EXPORT_TIMEOUT: otel(timerMs(positiveInt)),
    OTEL_BSP_MAX_QUEUE_SIZE: otel(positiveInt),
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: otel(positiveInt),
  });
}

/** A variable per stream naming its topic, defaulting to the declared name, in declaration order. */
function topicSchemas(): Record<TopicVariable, z.ZodDefault<z.ZodString>> {
  return Object.fromEntries(
    streamRoles.map((role) => [
      streams[role].variable,
      z.string().min(1).default(streams[role].defaultTopic),
    ]),
  ) as Record<TopicVariable, z.ZodDefault<z.ZodString>>;
}

export type ServiceEnv = z.infer<ReturnType<typeof serviceEnvSchema>>;

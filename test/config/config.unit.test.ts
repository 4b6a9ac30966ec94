import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, formerNamesUsed, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('refuses two TOPIC_* variables naming the same topic, listing every clash', () => {
    const load = (): unknown =>
      loadConfig({
        TOPIC_ORDERS: 'same',
        TOPIC_ARTICLES: 'same',
        TOPIC_ORDER_STATUS: 'x',
        TOPIC_API_KEYS: 'x',
        HTTP_PORT: 'abc',
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/TOPIC_ORDERS, TOPIC_ARTICLES: name the same topic 'same'/);
    expect(load).toThrow(/TOPIC_ORDER_STATUS, TOPIC_API_KEYS: name the same topic 'x'/);
    expect(load).toThrow(/HTTP_PORT/);
  });

  it('accepts four distinct topics', () => {
    expect(loadConfig({}).topics).toEqual({
      orders: 'pr.orders',
      orderStatus: 'pr.order-status',
      articles: 'pr.articles',
      apiKeys: 'pr.api-keys',
    });
  });

  it('takes a rebuild work share from 0.05 to 1, a quarter by default', () => {
    expect(loadConfig({}).candidates.workShare).toBe(0.25);
    expect(loadConfig({ CANDIDATE_WORK_SHARE: '1' }).candidates.workShare).toBe(1);
    expect(loadConfig({ CANDIDATE_WORK_SHARE: '0.05' }).candidates.workShare).toBe(0.05);
    expect(() => loadConfig({ CANDIDATE_WORK_SHARE: '0.01' })).toThrow(/CANDIDATE_WORK_SHARE/);
    expect(() => loadConfig({ CANDIDATE_WORK_SHARE: 'fast' })).toThrow(/CANDIDATE_WORK_SHARE/);
    expect(() => loadConfig({ CANDIDATE_WORK_SHARE: '1.5' })).toThrow(/CANDIDATE_WORK_SHARE/);
    // the former name still sets it, unless the new name is set to another value
    expect(loadConfig({ REBUILD_WORK_SHARE: '0.5' }).candidates.workShare).toBe(0.5);
    expect(loadConfig({ REBUILD_WORK_SHARE: '0.5', CANDIDATE_WORK_SHARE: '0.5' }).candidates.workShare).toBe(
      0.5,
    );
    expect(() => loadConfig({ REBUILD_WORK_SHARE: '0.5', CANDIDATE_WORK_SHARE: '0.75' })).toThrow(
      /REBUILD_WORK_SHARE: the former name of CANDIDATE_WORK_SHARE/,
    );
    expect(formerNamesUsed({ REBUILD_WORK_SHARE: '0.5' })).toEqual([
      { former: 'REBUILD_WORK_SHARE', now: 'CANDIDATE_WORK_SHARE' },
    ]);
  });

  it('turns the catch-up by replay off with CATCH_UP_REPLAY_MIN_LAG=off', () => {
    expect(loadConfig({ CATCH_UP_REPLAY_MIN_LAG: 'off' }).catchUp).toEqual({ minLag: null, minShare: 0.6 });
    expect(() => loadConfig({ CATCH_UP_REPLAY_MIN_LAG: 'OFF' })).toThrow(
      /CATCH_UP_REPLAY_MIN_LAG: must be off or a decimal integer of at least 1/,
    );
  });

  it('coerces nothing: an empty or non-decimal number is refused, and every such problem is listed at once', () => {
    const load = (): unknown =>
      loadConfig({
        HTTP_PORT: '',
        ADMIN_PORT: '0x1F90',
        READY_MAX_LAG: '',
        STALL_TIMEOUT_MS: '1e4',
        LAG_CHECK_INTERVAL_MS: ' 2000',
        RATE_LIMIT_MAX: '+5',
        RATE_LIMIT_WINDOW_MS: '60000.5',
        KAFKA_SESSION_TIMEOUT_MS: 'Infinity',
        CANDIDATE_WORK_SHARE: '',
      });
    expect(load).toThrow(ConfigError);
    for (const name of [
      'HTTP_PORT',
      'ADMIN_PORT',
      'READY_MAX_LAG',
      'STALL_TIMEOUT_MS',
      'LAG_CHECK_INTERVAL_MS',
      'RATE_LIMIT_MAX',
      'RATE_LIMIT_WINDOW_MS',
      'KAFKA_SESSION_TIMEOUT_MS',
      'CANDIDATE_WORK_SHARE',
    ]) {
      expect(load, name).toThrow(new RegExp(`${name}: `));
    }
    expect(loadConfig({ HTTP_PORT: '8081', READY_MAX_LAG: '0' })).toMatchObject({
      http: { port: 8081 },
      health: { readyMaxLag: 0 },
    });
  });

  it('takes durations up to 2147483647 ms, the longest delay a Node timer honours, and lists every one beyond it', () => {
    const timers = [
      'KAFKA_SESSION_TIMEOUT_MS',
      'STALL_TIMEOUT_MS',
      'LAG_CHECK_INTERVAL_MS',
      'RATE_LIMIT_WINDOW_MS',
      'OTEL_BSP_SCHEDULE_DELAY',
      'OTEL_BSP_EXPORT_TIMEOUT',
    ];
    const longest = String(2 ** 31 - 1);
    const load = (value: string): unknown =>
      loadConfig(Object.fromEntries(timers.map((name) => [name, value])));
    expect(() => load(String(2 ** 31))).toThrow(ConfigError);
    for (const name of timers) {
      expect(() => load(String(2 ** 31)), name).toThrow(new RegExp(`${name}: must be at most 2147483647 ms`));
    }
    expect(load(longest)).toMatchObject({
      kafka: { sessionTimeoutMs: 2 ** 31 - 1 },
      health: { stallTimeoutMs: 2 ** 31 - 1, lagCheckIntervalMs: 2 ** 31 - 1 },
      rateLimit: { windowMs: 2 ** 31 - 1 },
      tracing: null,
    });
    expect(
      loadConfig({
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_BSP_SCHEDULE_DELAY: longest,
        OTEL_BSP_EXPORT_TIMEOUT: longest,
      }).tracing?.batch,
    ).toMatchObject({ scheduledDelayMillis: 2 ** 31 - 1, exportTimeoutMillis: 2 ** 31 - 1 });
  });

  it('takes ports from 1 to 65535 (0: any free port), and refuses the API and admin listeners on one port', () => {
    expect(() => loadConfig({ HTTP_PORT: '65536' })).toThrow(/HTTP_PORT/);
    expect(() => loadConfig({ HTTP_PORT: '-1' })).toThrow(/HTTP_PORT/);
    expect(() => loadConfig({ HTTP_PORT: '9000', ADMIN_PORT: '9000' })).toThrow(
      /HTTP_PORT, ADMIN_PORT: the API and the admin listener cannot share port 9000/,
    );
    expect(() => loadConfig({ ADMIN_PORT: '8080' })).toThrow(/share port 8080/);
    expect(loadConfig({ HTTP_PORT: '0', ADMIN_PORT: '0' })).toMatchObject({
      http: { port: 0 },
      admin: { port: 0 },
    });
  });

  it('stops the executable with exit code 2 and the list of problems', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
      env: { PATH: process.env['PATH'], TOPIC_ORDERS: 'same', TOPIC_API_KEYS: 'same' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(
      /Invalid configuration:\n.*TOPIC_ORDERS, TOPIC_API_KEYS: name the same topic 'same'/,
    );
  });
});

describe('OpenTelemetry variables (the specification’s meaning; tracing off unless an exporter is asked for)', () => {
  it('leaves tracing off with nothing set, with a service name alone, when disabled, and with the none exporter', () => {
    for (const env of [
      {},
      { OTEL_SERVICE_NAME: 'orders' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'TRUE' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: '' },
    ]) {
      expect(loadConfig(env).tracing, JSON.stringify(env)).toBeNull();
    }
  });

  it('appends v1/traces to OTEL_EXPORTER_OTLP_ENDPOINT and takes the traces endpoint as it is', () => {
    const url = (env: Record<string, string>) => loadConfig(env).tracing?.otlpTracesUrl;
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(
      'http://collector:4318/v1/traces',
    );
    expect(url({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c/otlp/' })).toBe('https://c/otlp/v1/traces');
    expect(
      url({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9/spans',
      }),
    ).toBe('http://b:9/spans');
    expect(url({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe('http://localhost:4318/v1/traces');
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'console' }).tracing?.exporters).toEqual(['console']);
    expect(loadConfig({ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' }).tracing).not.toBeNull();
  });

  it('names the service by OTEL_SERVICE_NAME, else service.name of OTEL_RESOURCE_ATTRIBUTES, else orders-read-model', () => {
    const resource = (env: Record<string, string>) =>
      loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', ...env }).tracing?.resource;
    expect(resource({})).toEqual({ 'service.name': 'orders-read-model' });
    expect(
      resource({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=a,deployment.environment.name=eu%20west' }),
    ).toEqual({
      'service.name': 'a',
      'deployment.environment.name': 'eu west',
    });
    expect(resource({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=a', OTEL_SERVICE_NAME: 'b' })).toEqual({
      'service.name': 'b',
    });
  });

  it('refuses what it cannot honour, every problem at once', () => {
    const load = (): unknown =>
      loadConfig({
        OTEL_SDK_DISABLED: 'yes',
        OTEL_TRACES_EXPORTER: 'zipkin',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        OTEL_TRACES_SAMPLER: 'jaeger_remote',
        OTEL_TRACES_SAMPLER_ARG: '1.5',
        OTEL_RESOURCE_ATTRIBUTES: 'novalue',
      });
    expect(load).toThrow(ConfigError);
    for (const variable of [
      'OTEL_SDK_DISABLED: must be true or false',
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf',
      'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
      'OTEL_RESOURCE_ATTRIBUTES',
    ]) {
      expect(load).toThrow(variable);
    }
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'otlp,none' })).toThrow(/none cannot be listed/);
  });
});

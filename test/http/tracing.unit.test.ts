import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import type { Tracing } from '../../src/tracing/spans.js';
import { startTracing } from '../../src/tracing/tracing.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { apiReadsOfOneFile } from '../../src/keys/key-lookup.js';

const v1 = '/api/external-api/v1';
const receiver = await startOtlpReceiver();

/** The API over a small model with tracing on, exporting to the receiver; its log lines kept. */
async function tracedApi(env: Record<string, string> = {}) {
  const model = memoryReadModel();
  model.apply(
    issueKeyOf(1),
    orderCreated({ order_id: 1, organization_id: 1, status: 'finished', created_at: at(10) }),
  );
  const reader = new ReadModelReader(model.db);
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as never) });
  const config = loadConfig({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_SCHEDULE_DELAY: '20',
    ...env,
  });
  const tracing = (await startTracing(config.tracing, logger)) as Tracing;
  const app = await buildApp({ readerOf: () => apiReadsOfOneFile(reader), logger, tracing });
  const get = (url: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: `${v1}${url}`, headers });
  const close = async () => {
    await app.close();
    await tracing.shutdown();
    model.db.close();
  };
  return { get, lines, close };
}

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const parentId = '00f067aa0ba902b7';
const ofTrace = (id: string) => (span: ReceivedSpan) => span.traceId === id;
const withRequestId = (id: string) => (span: ReceivedSpan) =>
  span.attributes['orders_read_model.request.id'] === id;

describe('request spans (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  it('continue an incoming traceparent: a server span, child of it, with route, method, status and organization', async () => {
    const api = await tracedApi();
    const answer = await api.get('/orders?limit=5', {
      authorization: `Bearer ${keyOf(1)}`,
      traceparent: `00-${traceId}-${parentId}-01`,
      'x-request-id': 'traced-1',
    });
    await api.close();
    expect(answer.statusCode).toBe(200);
    const [span] = await receiver.spansWhere(ofTrace(traceId));
    expect(span).toMatchObject({
      traceId,
      parentSpanId: parentId,
      name: `GET ${v1}/orders`,
      kind: 'SPAN_KIND_SERVER',
      attributes: {
        'http.request.method': 'GET',
        'http.route': `${v1}/orders`,
        'http.response.status_code': 200,
        'url.path': `${v1}/orders`,
        'url.scheme': 'http',
        'orders_read_model.organization.id': 1,
        'orders_read_model.request.id': 'traced-1',
      },
      resource: { 'service.name': 'orders-read-model', 'telemetry.sdk.language': 'nodejs' },
    });
    expect(span?.status.code).not.toBe('STATUS_CODE_ERROR');
    expect(receiver.contentTypes).toContain('application/x-protobuf');
  });

  it("puts the request's trace id in every log line of the request, the first one included", async () => {
    const api = await tracedApi();
    await api.get('/orders', {
      authorization: `Bearer ${keyOf(1)}`,
      traceparent: `00-${traceId}-${parentId}-01`,
      'x-request-id': 'logged-1',
    });
    await api.get('/orders', { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': 'logged-2' });
    await api.close();
    const ofRequest = (id: string) => api.lines.filter((line) => line['reqId'] === id);
    expect(ofRequest('logged-1').map((line) => line['msg'])).toEqual([
      'incoming request',
      'request completed',
    ]);
    for (const line of ofRequest('logged-1'))
      expect(line).toMatchObject({ trace_id: traceId, trace_flags: '01' });
    // without a traceparent, a new trace: its id is the exported span's
    const [fresh] = await receiver.spansWhere(withRequestId('logged-2'));
    expect(fresh?.parentSpanId ?? '').toBe('');
    for (const line of ofRequest('logged-2')) {
      expect(line).toMatchObject({ trace_id: fresh?.traceId, span_id: fresh?.spanId });
    }
  });

  it('never record the key nor the Authorization header; a 401 has no organization, an unknown route no route', async () => {
    const api = await tracedApi();
    await api.get('/orders', { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': 'secret-200' });
    await api.get('/orders', { authorization: 'Bearer not-a-key-of-anyone', 'x-request-id': 'secret-401' });
    await api.get('/nowhere', { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': 'secret-404' });
    await api.close();
    const [ok] = await receiver.spansWhere(withRequestId('secret-200'));
    const [refused] = await receiver.spansWhere(withRequestId('secret-401'));
    const [unknown] = await receiver.spansWhere(withRequestId('secret-404'));
    expect(refused?.attributes).toMatchObject({
      'http.response.status_code': 401,
      'http.route': `${v1}/orders`,
    });
    expect(refused?.attributes).not.toHaveProperty('orders_read_model.organization.id');
    expect(unknown?.attributes).toMatchObject({ 'http.response.status_code': 404 });
    expect(unknown?.attributes).not.toHaveProperty('http.route');
    expect(unknown?.name).toBe('GET');
    const everything = JSON.stringify([ok, refused, unknown]);
    expect(everything).not.toContain(keyOf(1));
    expect(everything).not.toContain('not-a-key-of-anyone');
    expect(everything.toLowerCase()).not.toContain('bearer');
    expect(everything.toLowerCase()).not.toContain('authorization');
  });

  it('honour an unsampled traceparent (parentbased_always_on): nothing exported, the trace id still logged', async () => {
    const unsampled = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1';
    const api = await tracedApi({ OTEL_SERVICE_NAME: 'orders-eu' });
    await api.get('/orders', {
      authorization: `Bearer ${keyOf(1)}`,
      traceparent: `00-${unsampled}-${parentId}-00`,
      'x-request-id': 'unsampled',
    });
    await api.get('/orders', { authorization: `Bearer ${keyOf(1)}`, 'x-request-id': 'named' });
    await api.close();
    const [named] = await receiver.spansWhere(withRequestId('named'));
    expect(named?.resource['service.name']).toBe('orders-eu');
    expect(receiver.spans.filter(ofTrace(unsampled))).toEqual([]);
    expect(api.lines.filter((line) => line['reqId'] === 'unsampled').map((line) => line['trace_id'])).toEqual(
      [unsampled, unsampled],
    );
  });

  it('ignore the traceparent with OTEL_PROPAGATORS=none', async () => {
    const api = await tracedApi({ OTEL_PROPAGATORS: 'none' });
    await api.get('/orders', {
      authorization: `Bearer ${keyOf(1)}`,
      traceparent: `00-${traceId}-${parentId}-01`,
      'x-request-id': 'unpropagated',
    });
    await api.close();
    const [span] = await receiver.spansWhere(withRequestId('unpropagated'));
    expect(span?.traceId).not.toBe(traceId);
    expect(span?.parentSpanId ?? '').toBe('');
  });
});

describe('without OTEL_* variables', () => {
  it('starts no tracing and never loads the OpenTelemetry module', async () => {
    let loaded = 0;
    const load = () => {
      loaded += 1;
      return import('../../src/tracing/otel.js');
    };
    const logger = pino({ level: 'silent' });
    for (const env of [
      {},
      { OTEL_SERVICE_NAME: 'named-only' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_EXPORTER: 'none' },
    ]) {
      expect(await startTracing(loadConfig(env).tracing, logger, load)).toBeNull();
    }
    expect(loaded).toBe(0);
    expect(
      await startTracing(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing, logger, load),
    ).not.toBeNull();
    expect(loaded).toBe(1);
  });
});

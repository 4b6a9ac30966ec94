import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { projectRoot } from '../../tools/harness.js';
import { freePort } from '../../tools/local-kafka.js';
import { apiKeyIssued, at, orderCreated } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

const receiver = await startOtlpReceiver();
const { admin, producer } = await connectedClients(testKafka());
const rawKey = 'tracing-e2e-raw-key-7d41';
const orders = 12;

/** Topics holding a key of organization 5, `orders` orders and one message no schema accepts. */
async function topicsWithData() {
  const topics = await createContractTopics(admin);
  await publish(producer, topics, [
    apiKeyIssued('tracing-key', 5, sha256Hex(rawKey), { occurred_at: at(0) }),
    ...Array.from({ length: orders }, (_, i) =>
      orderCreated(
        { order_id: i + 1, organization_id: 5, created_at: at(i + 1) },
        { occurred_at: at(i + 1) },
      ),
    ),
    { role: 'orders', key: '999', raw: Buffer.from('{not json') },
  ]);
  return topics;
}

/** The service as a process with `env` added, answering once it lists every order. */
async function startedService(dir: string, env: Record<string, string>) {
  const topics = await topicsWithData();
  const port = await freePort();
  const service = spawnService({
    ...serviceEnv({ topics, dataDir: join(dir, 'data'), httpPort: port, groupId: uniqueTopicName('trace') }),
    NODE_OPTIONS: `--import ${join(projectRoot, 'test/helpers/record-opentelemetry-loads.mjs')}`,
    ...env,
  });
  const get = (headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders`, {
      headers: { authorization: `Bearer ${rawKey}`, ...headers },
    });
  await waitUntil(
    'every order is listed',
    async () => {
      const answer = await get().catch(() => null);
      return answer?.status === 200 && ((await answer.json()) as { total: number }).total === orders;
    },
    60_000,
  );
  return { topics, service, get };
}

async function stopped(service: ServiceProcess): Promise<number | null> {
  service.child.kill('SIGTERM');
  return service.exited;
}

const logLines = (service: ServiceProcess) =>
  service.output.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

describe('tracing of the service as a process', () => {
  const dir = tempDir('tracing-e2e');

  it('exports request and batch spans to an OTLP receiver, the last of them flushed by SIGTERM', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const parentId = 'b7ad6b7169203331';
    const { topics, service, get } = await startedService(join(dir, 'on'), {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_SERVICE_NAME: 'orders-read-model-e2e',
      // nothing is exported on a schedule during the test: what arrives, the stop flushed
      OTEL_BSP_SCHEDULE_DELAY: '600000',
      // the request's own lines are at debug
      LOG_LEVEL: 'debug',
    });
    const answer = await get({ traceparent: `00-${traceId}-${parentId}-01`, 'x-request-id': 'e2e-traced' });
    expect(answer.status).toBe(200);
    expect(
      receiver.spans.filter((span) => span.resource['service.name'] === 'orders-read-model-e2e'),
    ).toEqual([]);
    expect(await stopped(service)).toBe(0);

    const ours = receiver.spans.filter((span) => span.resource['service.name'] === 'orders-read-model-e2e');
    const [request] = ours.filter((span) => span.traceId === traceId);
    expect(request).toMatchObject({
      parentSpanId: parentId,
      kind: 'SPAN_KIND_SERVER',
      name: `GET ${API_PREFIX}/orders`,
      attributes: {
        'http.route': `${API_PREFIX}/orders`,
        'http.response.status_code': 200,
        'orders_read_model.organization.id': 5,
      },
    });
    const requestLines = logLines(service).filter((line) => line['reqId'] === 'e2e-traced');
    expect(requestLines.length).toBeGreaterThan(0);
    for (const line of requestLines) expect(line['trace_id']).toBe(traceId);

    const batches = ours.filter((span) => span.kind === 'SPAN_KIND_CONSUMER');
    const ofTopic = (topic: string) =>
      batches.filter((span) => span.attributes['messaging.destination.name'] === topic);
    const sum = (spans: ReceivedSpan[], attribute: string) =>
      spans.reduce((total, span) => total + Number(span.attributes[attribute]), 0);
    // Every message of the topic is in exactly one batch span (a producer's retry may have written some twice).
    const offsets = await admin.fetchTopicOffsets(topics.orders);
    for (const { partition, high } of offsets) {
      const covered = ofTopic(topics.orders)
        .filter((span) => span.attributes['messaging.destination.partition.id'] === String(partition))
        .map((span) => [
          Number(span.attributes['orders_read_model.batch.first_offset']),
          Number(span.attributes['orders_read_model.batch.last_offset']),
        ])
        .sort(([x = 0], [y = 0]) => x - y);
      expect(
        covered.flatMap(([first = 0, last = 0]) =>
          Array.from({ length: last - first + 1 }, (_, i) => first + i),
        ),
      ).toEqual(Array.from({ length: Number(high) }, (_, i) => i));
    }
    const ordersBatches = ofTopic(topics.orders);
    expect(
      sum(ordersBatches, 'orders_read_model.batch.events') -
        sum(ordersBatches, 'orders_read_model.batch.unchanged'),
    ).toBe(orders);
    expect(sum(ordersBatches, 'orders_read_model.batch.dead_letters')).toBeGreaterThanOrEqual(1);
    expect(sum(ofTopic(topics.apiKeys), 'orders_read_model.batch.events')).toBeGreaterThanOrEqual(1);
    for (const span of batches) {
      const a = span.attributes;
      expect(span.name).toBe(`apply ${String(a['messaging.destination.name'])}`);
      expect(a).toMatchObject({ 'messaging.system': 'kafka', 'messaging.operation.type': 'process' });
      expect(['0', '1', '2']).toContain(a['messaging.destination.partition.id']);
      expect(Number(a['orders_read_model.batch.last_offset'])).toBeGreaterThanOrEqual(
        Number(a['orders_read_model.batch.first_offset']),
      );
      expect(Number(a['orders_read_model.batch.next_offset'])).toBeGreaterThan(
        Number(a['orders_read_model.batch.last_offset']),
      );
      expect(a['messaging.batch.message_count']).toBe(
        Number(a['orders_read_model.batch.events']) +
          Number(a['orders_read_model.batch.dead_letters']) +
          Number(a['orders_read_model.batch.already_applied']),
      );
      expect(BigInt(span.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(span.startTimeUnixNano));
    }
    const everything = JSON.stringify(ours);
    expect(everything).not.toContain(rawKey);
    expect(everything.toLowerCase()).not.toContain('bearer');
    expect(
      service.output.filter((line) => line.includes('opentelemetry module loaded')).length,
    ).toBeGreaterThan(0);
  });

  it('loads no OpenTelemetry SDK module and exports nothing with nothing set, or with OTEL_SDK_DISABLED=true', async () => {
    const before = receiver.spans.length;
    for (const [name, env] of Object.entries({
      unset: {},
      disabled: { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
    })) {
      const { service, get } = await startedService(join(dir, name), env);
      await get({ traceparent: '00-1bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
      expect(await stopped(service)).toBe(0);
      expect(
        service.output.filter((line) => line.includes('opentelemetry module loaded')),
        name,
      ).toEqual([]);
      expect(
        logLines(service).filter((line) => 'trace_id' in line || line['msg'] === 'tracing on'),
        name,
      ).toEqual([]);
    }
    expect(receiver.spans.length).toBe(before);
  });
});

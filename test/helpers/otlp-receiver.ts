/**
 * An OTLP/HTTP receiver on loopback, started by the test: Elastic's mock OTLP server
 * (@elastic/mockotlpserver), which implements the protocol's HTTP transport (`POST /v1/traces`,
 * protobuf or JSON) and decodes protobuf with protobufjs and OpenTelemetry's own .proto files. No
 * OpenTelemetry Collector binary can be fetched on this project's machines; this receiver runs in
 * the test's process and keeps every span it is sent.
 */
import { MockOtlpServer, normalizeTrace } from '@elastic/mockotlpserver';
import { afterAll } from 'vitest';
import { waitUntil } from '../../tools/harness.js';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** absent (or empty) for a root span */
  parentSpanId?: string;
  name: string;
  kind: string;
  /** as decoded: integers as numbers, strings, booleans */
  attributes: Record<string, unknown>;
  status: { code?: string; message?: string };
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  /** its resource's attributes */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** the base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it */
  url: string;
  spans: ReceivedSpan[];
  /** the Content-Type of every export request received */
  contentTypes: string[];
  /** the spans `select` picks, once there are at least `count` */
  spansWhere(select: (span: ReceivedSpan) => boolean, count?: number): Promise<ReceivedSpan[]>;
}

/**
 * Starts the receiver, stopped after the file. One per test file: it hands what it decodes to its
 * subscribers through a process-wide diagnostics channel.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = new MockOtlpServer({
    services: ['http'],
    httpHostname: '127.0.0.1',
    httpPort: 0,
    logLevel: 'warn',
    onRequest: (request) => contentTypes.push(request.headers['content-type'] ?? ''),
    onTrace: (request) => {
      for (const resourceSpans of normalizeTrace(request).resourceSpans) {
        for (const scopeSpans of resourceSpans.scopeSpans) {
          for (const span of scopeSpans.spans) {
            spans.push({
              ...span,
              attributes: span.attributes ?? {},
              status: span.status ?? {},
              resource: resourceSpans.resource?.attributes ?? {},
            });
          }
        }
      }
    },
  });
  await server.start();
  afterAll(() => server.close());
  const address = server.httpUrl;
  if (address === null) throw new Error('the OTLP receiver is not listening');
  return {
    url: address.origin,
    spans,
    contentTypes,
    spansWhere: async (select, count = 1) => {
      await waitUntil(
        `the OTLP receiver has ${count} such span(s)`,
        () => spans.filter(select).length >= count,
        15_000,
        50,
      );
      return spans.filter(select);
    },
  };
}

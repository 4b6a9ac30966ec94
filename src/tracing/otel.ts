/**
 * Tracing with the OpenTelemetry SDK: the one module that imports `@opentelemetry/*`, loaded by
 * `startTracing` only when tracing is on. One tracer provider, in the main thread: the projector's
 * threads send each applied batch's facts and times with the message they already post, and the
 * batch's span is recorded here, so that one exporter, one queue and one flush at shutdown serve
 * the whole process and the threads load nothing of it.
 */
import { basename } from 'node:path';
import {
  DiagLogLevel,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  defaultTextMapGetter,
  diag,
  type Attributes,
  type Context,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { shutdownWaitMs, type AppliedBatch, type RequestSpan, type Tracing } from './spans.js';

/** Attributes of this service's own, in a namespace of its own (OpenTelemetry's naming guidelines). */
export const serviceAttributes = {
  organizationId: 'orders_read_model.organization.id',
  requestId: 'orders_read_model.request.id',
  modelFile: 'orders_read_model.model_file',
  firstOffset: 'orders_read_model.batch.first_offset',
  lastOffset: 'orders_read_model.batch.last_offset',
  nextOffset: 'orders_read_model.batch.next_offset',
  events: 'orders_read_model.batch.events',
  deadLetters: 'orders_read_model.batch.dead_letters',
  unchanged: 'orders_read_model.batch.unchanged',
  alreadyApplied: 'orders_read_model.batch.already_applied',
} as const;

function samplerOf(config: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
  }
}

function processorsOf(config: TracingConfig): SpanProcessor[] {
  return config.exporters.map((exporter) =>
    exporter === 'otlp'
      ? // The exporter reads its transport variables itself (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
        // _COMPRESSION, _CERTIFICATE…, and their _TRACES_ forms), as every OpenTelemetry SDK does.
        new BatchSpanProcessor({
          exporter: new OTLPTraceExporter({ url: config.otlpTracesUrl }),
          ...config.batch,
        })
      : new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() }),
  );
}

export function createTracing(config: TracingConfig, logger: Logger): Tracing {
  const log = logger.child({ component: 'opentelemetry' });
  // The SDK reports what fails (an export refused or timed out) through its diagnostic logger.
  diag.setLogger(
    {
      error: (message, ...args) => log.warn({ args }, message),
      warn: (message, ...args) => log.warn({ args }, message),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes(config.resource)),
    sampler: samplerOf(config),
    spanProcessors: processorsOf(config),
  });
  const tracer = provider.getTracer('orders-read-model');
  const propagator = config.traceContext ? new W3CTraceContextPropagator() : null;

  return {
    startRequest: ({ method, path, headers }): RequestSpan => {
      const parent: Context =
        propagator === null ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const span = tracer.startSpan(
        method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            [ATTR_HTTP_REQUEST_METHOD]: method,
            [ATTR_URL_PATH]: path,
            [ATTR_URL_SCHEME]: 'http',
          },
        },
        parent,
      );
      const context = span.spanContext();
      return {
        ids: {
          trace_id: context.traceId,
          span_id: context.spanId,
          trace_flags: `0${context.traceFlags.toString(16)}`.slice(-2),
        },
        end: (outcome) => {
          if (outcome.route !== undefined) {
            span.updateName(`${method} ${outcome.route}`);
            span.setAttribute(ATTR_HTTP_ROUTE, outcome.route);
          }
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, outcome.status);
          span.setAttribute(serviceAttributes.requestId, outcome.requestId);
          if (outcome.orgId !== undefined) span.setAttribute(serviceAttributes.organizationId, outcome.orgId);
          // A server's 4xx is the caller's doing, not an error of the service (HTTP semantic conventions).
          if (outcome.aborted || outcome.status >= 500) {
            const errorType = outcome.aborted ? 'aborted' : String(outcome.status);
            span.setAttribute(ATTR_ERROR_TYPE, errorType);
            span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
          }
          span.end();
        },
      };
    },
    batchApplied: (batch: AppliedBatch) => {
      const attributes: Attributes = {
        // Messaging semantic conventions (development status: their names are written out here).
        'messaging.system': 'kafka',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'apply',
        'messaging.destination.name': batch.topic,
        'messaging.destination.partition.id': String(batch.partition),
        'messaging.consumer.group.name': batch.groupId,
        'messaging.batch.message_count': batch.messages,
        [serviceAttributes.modelFile]: basename(batch.file),
        [serviceAttributes.events]: batch.events,
        [serviceAttributes.deadLetters]: batch.deadLetters,
        [serviceAttributes.unchanged]: batch.unchanged,
        [serviceAttributes.alreadyApplied]: batch.alreadyApplied,
      };
      if (batch.firstOffset !== undefined) attributes[serviceAttributes.firstOffset] = batch.firstOffset;
      if (batch.lastOffset !== undefined) attributes[serviceAttributes.lastOffset] = batch.lastOffset;
      if (batch.nextOffset !== null) attributes[serviceAttributes.nextOffset] = batch.nextOffset;
      tracer
        .startSpan(
          `apply ${batch.topic}`,
          { kind: SpanKind.CONSUMER, startTime: batch.startedAt, attributes },
          ROOT_CONTEXT,
        )
        .end(batch.endedAt);
    },
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), shutdownWaitMs);
      });
      const done = await Promise.race([
        provider.shutdown().then(
          () => 'done' as const,
          (error: unknown) => {
            log.warn({ err: error }, 'exporting the last spans failed');
            return 'done' as const;
          },
        ),
        waited,
      ]);
      clearTimeout(timer);
      if (done === 'late') log.warn({ waitedMs: shutdownWaitMs }, 'the last spans were not exported in time');
      diag.disable();
    },
  };
}

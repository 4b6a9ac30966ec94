/**
 * The service's tracing, as the rest of `src/` sees it: a request's span, an applied batch's span,
 * and a flush at shutdown. Nothing here imports OpenTelemetry: `otel.ts` alone does, and it is
 * loaded only when the OTEL_* variables turn tracing on, so that a service nobody asked to trace
 * loads no SDK and pays nothing.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';

/** A span's identity as log lines name it (the field names of OpenTelemetry's log data model). */
export interface TraceIds {
  trace_id: string;
  span_id: string;
  trace_flags: string;
}

/** How a request was answered, known when its response is done. */
export interface RequestOutcome {
  status: number;
  /** the matched route's pattern; absent for an unknown route */
  route?: string;
  /** the caller's organization, once authenticated */
  orgId?: number;
  requestId: string;
  /** the connection closed before the response was complete */
  aborted: boolean;
}

export interface RequestSpan {
  readonly ids: TraceIds;
  end(outcome: RequestOutcome): void;
}

/** A batch the projector applied, with its times (epoch milliseconds) measured in the projector's thread. */
export interface AppliedBatch {
  topic: string;
  partition: number;
  groupId: string;
  /** the model file the batch was applied to (the served one, or a candidate's) */
  file: string;
  firstOffset?: number;
  lastOffset?: number;
  messages: number;
  events: number;
  deadLetters: number;
  unchanged: number;
  skipped: number;
  nextOffset: number | null;
  startedAt: number;
  endedAt: number;
}

export interface Tracing {
  /** A server span for a request that has just arrived: a child of its `traceparent` when it has one. */
  startRequest(request: { method: string; path: string; headers: IncomingHttpHeaders }): RequestSpan;
  batchApplied(batch: AppliedBatch): void;
  /** Exports what is finished and stops; waits at most `shutdownWaitMs`. */
  shutdown(): Promise<void>;
}

/** The most a stop waits for the spans still to be exported (the service's stop has 15 s in all). */
export const shutdownWaitMs = 2000;

export type LoadTracing = () => Promise<{
  createTracing: (config: TracingConfig, logger: Logger) => Tracing;
}>;

/**
 * The tracing the configuration asks for, or null. `load` is the import of the OpenTelemetry
 * implementation; with tracing off it is never called.
 */
export async function startTracing(
  config: TracingConfig | null,
  logger: Logger,
  load: LoadTracing = () => import('./otel.js'),
): Promise<Tracing | null> {
  if (config === null) return null;
  const { createTracing } = await load();
  const tracing = createTracing(config, logger);
  logger.info(
    {
      exporters: config.exporters,
      // the URL without what may be credentials in it (user info, query)
      ...(config.exporters.includes('otlp') ? { endpoint: withoutCredentials(config.otlpTracesUrl) } : {}),
      serviceName: config.resource['service.name'],
      sampler: config.sampler,
    },
    'tracing on',
  );
  return tracing;
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/**
 * What tracing records and how the rest of `src/` hands it over: a request's span, an applied
 * batch, the flush at shutdown. Shared by `tracing.ts` (which loads the implementation only when
 * tracing is on) and `otel.ts` (the implementation), so that neither imports the other statically.
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
  alreadyApplied: number;
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

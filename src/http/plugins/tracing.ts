/**
 * A server span per request, when tracing is on (`tracing/`): started as Fastify creates the
 * request's logger, so that every log line of the request, the first included, names its trace
 * (`trace_id`, `span_id`, `trace_flags`); ended when the response is done, with its route, status
 * and, once authenticated, the caller's organization. Nothing of the request's headers is recorded
 * but the `traceparent` it continues: never the Authorization header, nor the key.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { RequestSpan, Tracing } from '../../tracing/spans.js';
import type { Caller } from '../caller.js';
import { requestLogger } from './observability.js';

/** The span of each request still in progress, found by its Node request. */
const spans = new WeakMap<IncomingMessage, RequestSpan>();

/** Fastify options that start each request's span with its logger; none without tracing. */
export function tracingOptions(
  tracing: Tracing | undefined,
): Pick<FastifyServerOptions, 'childLoggerFactory'> {
  if (tracing === undefined) return {};
  return {
    childLoggerFactory: (logger, bindings, options, rawRequest) => {
      const request = rawRequest;
      const url = request.url ?? '/';
      const query = url.indexOf('?');
      const span = tracing.startRequest({
        method: request.method ?? 'GET',
        path: query === -1 ? url : url.slice(0, query),
        headers: request.headers,
      });
      spans.set(request, span);
      return requestLogger(logger, { ...bindings, ...span.ids }, options);
    },
  };
}

/** Ends each request's span once its response is done (or its connection gone). */
export function requestTracing(app: FastifyInstance, tracing: Tracing | undefined): void {
  if (tracing === undefined) return;
  app.addHook('onRequest', (request, reply, done) => {
    const span = spans.get(request.raw);
    if (span !== undefined) {
      spans.delete(request.raw);
      let finished = false;
      reply.raw.once('finish', () => (finished = true));
      reply.raw.once('close', () => {
        const route = request.routeOptions.url;
        const caller = request.caller as Caller | undefined;
        span.end({
          status: reply.raw.statusCode,
          ...(route === undefined ? {} : { route }),
          // set by authentication (`plugins/authenticate.ts`) once the key is known
          ...(caller === undefined ? {} : { orgId: caller.orgId }),
          requestId: request.id,
          aborted: !finished,
        });
      });
    }
    done();
  });
}

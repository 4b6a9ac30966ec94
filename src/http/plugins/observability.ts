/** Request ids (a caller's `X-Request-Id` kept when sane, else a UUID; echoed on every answer) and request metrics. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { countRequest } from '../../shared-flags.js';
import type { RequestMetrics } from '../../request-metrics.js';

export const requestIdOptions: Pick<FastifyServerOptions, 'genReqId'> = {
  genReqId: (request) => {
    const given = request.headers['x-request-id'];
    return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
  },
};

/** Echoes the request id; for answers given before any hook runs (framework errors). */
export function echoRequestId(request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('x-request-id', request.id);
}

export function observability(
  app: FastifyInstance,
  metrics: Pick<RequestMetrics, 'httpDuration'> | undefined,
  requests: Int32Array | undefined,
): void {
  // Set when the request arrives, not in onSend: every answer after it keeps its headers, and a
  // route with no onSend hook skips Fastify's onSend hook runner (the 304 path is mostly headers).
  app.addHook('onRequest', (request, reply, done) => {
    echoRequestId(request, reply);
    if (requests !== undefined) countRequest(requests);
    done();
  });
  const httpDuration = metrics?.httpDuration;
  if (httpDuration === undefined) return;
  app.addHook('onResponse', (request, reply, done) => {
    httpDuration.observe(
      {
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
}

/** Request ids (a caller's `X-Request-Id` kept when sane, else a UUID; echoed on every answer) and request metrics. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { ServiceMetrics } from '../../metrics.js';

export const requestIdOptions: Pick<FastifyServerOptions, 'genReqId'> = {
  genReqId: (request) => {
    const given = request.headers['x-request-id'];
    return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
  },
};

export function observability(app: FastifyInstance, metrics: ServiceMetrics | undefined): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    done(null, payload);
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

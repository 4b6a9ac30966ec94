/** The admin listener: liveness, readiness and Prometheus metrics, outside the public base path. */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from '../logger.js';
import { Registry } from 'prom-client';
import type { HealthReport } from '../lifecycle/read-model-lifecycle.js';

export async function buildAdminApp(deps: {
  health: () => HealthReport;
  /** the Prometheus text of the process, with every request thread's request metrics */
  metrics: () => Promise<string>;
  logger: Logger;
}): Promise<FastifyInstance> {
  // Probes and scrapes arrive every few seconds: their request lines stay below the default level.
  const logger: FastifyBaseLogger = deps.logger.child({ component: 'admin' }, { level: 'warn' });
  const app = Fastify({ loggerInstance: logger });
  app.get('/healthz', () => ({ status: 'alive' }));
  app.get('/readyz', (_request, reply) => {
    const report = deps.health();
    return reply.code(report.ready ? 200 : 503).send(report);
  });
  app.get('/metrics', async (_request, reply) => {
    const body = await deps.metrics();
    return reply.type(Registry.PROMETHEUS_CONTENT_TYPE).send(body);
  });
  await app.ready();
  return app;
}

/**
 * A request thread: the API on the main thread's port (SO_REUSEPORT: the kernel spreads
 * connections over the threads), reading through read-only connections of its own to the files
 * the lifecycle's last view names.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../../logger.js';
import { orderModelRoles } from '../../../schemas/streams.js';
import { RequestMetrics } from '../../request-metrics.js';
import { startTracing } from '../../tracing/tracing.js';
import { buildApp } from '../app.js';
import type { FromRequestThread, RequestThreadData, ToRequestThread } from './messages.js';
import { ViewFollower } from './view-follower.js';

const data = workerData as RequestThreadData;
const port = parentPort;
if (port === null) throw new Error('request-thread.ts runs as a worker thread');
const post = (message: FromRequestThread): void => port.postMessage(message);
const logger = createLogger(data.config.logLevel).child({ thread: data.index });
process.on('warning', (warning) => post({ type: 'warning', name: warning.name, message: warning.message }));

try {
  const follower = new ViewFollower(data.view, data.published, data.viewPort);
  const metrics = new RequestMetrics();
  const tracing = (await startTracing(data.config.tracing, logger)) ?? undefined;
  const app = await buildApp({
    readerOf: () => follower.reads,
    logger,
    metrics,
    rateLimit: data.config.rateLimit,
    rateTable: data.rateTable,
    requests: data.requests,
    tracing,
    readPositionWaitMs: data.config.http.readPositionWaitMs,
    waits: { settings: data.config.http.waits, table: data.waitTable, region: data.index },
    modelTopics: orderModelRoles.map((role) => data.config.topics[role]),
  });
  // reusePort (Node ≥ 22.12) is passed on to net.Server.listen; Fastify's types do not name it
  await app.listen({ host: data.config.http.host, port: data.port, reusePort: true } as {
    host: string;
    port: number;
  });
  port.on('message', (message: ToRequestThread) => {
    if (message.type === 'metrics') {
      void metrics.collect().then((json) => post({ type: 'metrics', id: message.id, metrics: json }));
      return;
    }
    void (async () => {
      await app.close();
      follower.close();
      await tracing?.shutdown();
      process.exit(0);
    })();
  });
  post({ type: 'listening' });
} catch (error) {
  const failure = error instanceof Error ? error : new Error(String(error));
  post({
    type: 'failed',
    message: failure.message,
    ...(failure.stack === undefined ? {} : { stack: failure.stack }),
  });
  process.exit(1);
}

/**
 * The running service, put together: the Kafka port, the read-model lifecycle (supervised
 * projectors in worker threads, candidates, switches) with the timers that drive its checks
 * (`lifecycle/timers.ts`), the public API and its request threads, and the admin listener. The one
 * place, with `main.ts`, that builds clients.
 */
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from './config.js';
import { newRequestCounter } from './shared-flags.js';
import { startProjectorThread } from './projector/projector-thread.js';
import { buildAdminApp } from './http/admin.js';
import { buildApp } from './http/app.js';
import { newRateTable } from './http/rate-windows.js';
import { RequestThreads } from './http/threads/request-threads.js';
import { kafkaPortOf } from './kafka/client.js';
import type { KafkaPort } from './kafka/port.js';
import { systemClock } from './lifecycle/clock.js';
import type { RunningProjector } from './projector/projector-handle.js';
import {
  ReadModelLifecycle,
  type HealthReport,
  type LifecycleEvents,
} from './lifecycle/read-model-lifecycle.js';
import { driveLifecycle } from './lifecycle/timers.js';
import type { Logger } from './logger.js';
import { ServiceMetrics } from './metrics.js';
import { ModelFiles } from './read-model/files.js';
import type { ReadView } from './read-model/read-view.js';
import { metricsText, requestThreadMetrics } from './request-metrics.js';
import { takeServingLock, type ServingLock } from './read-model/serving-lock.js';
import type { Tracing } from './tracing/spans.js';
import { startTracing } from './tracing/tracing.js';

export type { HealthReport };

export interface RunningService {
  app: FastifyInstance;
  admin: FastifyInstance;
  health: () => HealthReport;
  lifecycle: ReadModelLifecycle;
  /** the served model's projector, for diagnostics; null while none runs */
  projector: () => RunningProjector | null;
  /** the request threads beside the main thread (HTTP_WORKERS > 1), for diagnostics */
  requestThreads: RequestThreads | null;
  /** Stops accepting requests, finishes in-flight ones, stops the projectors, closes the models. */
  close(): Promise<void>;
}

export class MissingTopicsError extends Error {
  readonly code = 'TOPICS_MISSING';
}

export async function startService(config: ServiceConfig, logger: Logger): Promise<RunningService> {
  const files = new ModelFiles(config.dataDir);
  const servingLock = takeServingLock(config.dataDir);
  try {
    return await startServing(config, logger, files, servingLock);
  } catch (error) {
    servingLock.release();
    throw error;
  }
}

async function startServing(
  config: ServiceConfig,
  logger: Logger,
  files: ModelFiles,
  servingLock: ServingLock,
): Promise<RunningService> {
  const kafka = await connectedPort(config, logger);
  const tracing = (await startTracing(config.tracing, logger)) ?? undefined;
  // Counted by the API, read by projectors that give way to requests (candidates catching up).
  const requests = newRequestCounter();
  const metrics: ServiceMetrics = new ServiceMetrics((): string => running.servedFile());
  const rateTable = newRateTable(Date.now());
  // Told every view from the start; started once the main thread listens (they take its port).
  const threads: RequestThreads | null =
    config.http.workers > 1
      ? new RequestThreads({
          count: config.http.workers - 1,
          config,
          logger,
          requests,
          rateTable,
          view: (): ReadView => running.readView(),
        })
      : null;
  const running: ReadModelLifecycle = lifecycleOf(config, logger, files, kafka, {
    requests,
    tracing,
    events: metrics.lifecycleEvents(),
    views: threads,
  });
  running.start();

  const app = await buildApp({
    readerOf: () => running.reads,
    logger,
    metrics: metrics.requests,
    rateLimit: config.rateLimit,
    rateTable,
    requests,
    tracing,
    readPositionWaitMs: config.http.readPositionWaitMs,
  });
  const admin = await buildAdminApp({
    health: () => running.health(),
    metrics: async () =>
      metricsText(metrics.registry, [
        await metrics.requests.snapshot(),
        ...((await threads?.snapshots()) ?? []),
      ]),
    logger,
  });
  try {
    await listen(app, config, threads);
    await admin.listen({ host: config.admin.host, port: config.admin.port });
  } catch (error) {
    await threads?.stop();
    await app.close();
    await running.stop();
    await kafka.close();
    await tracing?.shutdown();
    throw error;
  }
  if (threads !== null) requestThreadMetrics(metrics.registry, threads);

  const timers = driveLifecycle(running, { lagCheckIntervalMs: config.health.lagCheckIntervalMs, logger });

  logger.info(
    {
      groupId: config.kafka.groupId,
      topics: config.topics,
      file: running.servedFile(),
      admin: config.admin.port,
    },
    'service started',
  );

  return {
    app,
    admin,
    lifecycle: running,
    health: () => running.health(),
    projector: () => running.servedProjector(),
    requestThreads: threads,
    close: async () => {
      timers.stop();
      await app.close();
      await threads?.stop();
      await admin.close();
      await running.stop();
      await kafka.close();
      // after the projectors: their last batches' spans are among those exported
      await tracing?.shutdown();
      servingLock.release();
    },
  };
}

/** The lifecycle of the served model and of the keys store, their projectors in worker threads. */
function lifecycleOf(
  config: ServiceConfig,
  logger: Logger,
  files: ModelFiles,
  kafka: KafkaPort,
  parts: {
    requests: Int32Array;
    tracing: Tracing | undefined;
    events: LifecycleEvents;
    views: RequestThreads | null;
  },
): ReadModelLifecycle {
  const { requests, tracing, views } = parts;
  return new ReadModelLifecycle({
    files,
    topics: config.topics,
    groupId: config.kafka.groupId,
    clock: systemClock,
    logger,
    readyMaxLag: config.health.readyMaxLag,
    stallTimeoutMs: config.health.stallTimeoutMs,
    endOffsets: (topics) => kafka.endOffsets(topics),
    startProjector: (spec) => startProjectorThread({ ...spec, config, logger, requests, tracing }),
    keysStallMs: config.health.keysStallMs,
    events: parts.events,
    ...(views === null ? {} : { views }),
  });
}

/** Binds the port without SO_REUSEPORT and lets it go: EADDRINUSE if any process listens on it. */
async function assertPortFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, resolve);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

function listeningPort(app: FastifyInstance): number {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the API listens on no TCP port');
  return address.port;
}

/** The Kafka port, once the topics are known to exist (or the broker did not answer). */
async function connectedPort(config: ServiceConfig, logger: Logger): Promise<KafkaPort> {
  const kafka = kafkaPortOf(config, logger);
  try {
    await assertTopicsExist(kafka, Object.values(config.topics));
  } catch (error) {
    if (error instanceof MissingTopicsError) {
      await kafka.close();
      throw error;
    }
    // An unreachable broker is no reason to refuse to serve the model on disk: the supervisor keeps
    // trying to start the projector, and /readyz says why it is down.
    logger.warn({ err: error }, 'the broker did not answer at start-up; serving the model on disk meanwhile');
  }
  return kafka;
}

/** The API on HTTP_PORT: the main thread, then the request threads on the port it got. */
async function listen(
  app: FastifyInstance,
  config: ServiceConfig,
  threads: RequestThreads | null,
): Promise<void> {
  // With SO_REUSEPORT another process listening the same way would silently share the port and
  // half the connections: the port must be free first.
  if (threads !== null && config.http.port !== 0) await assertPortFree(config.http.host, config.http.port);
  // reusePort (Node ≥ 22.12) is passed on to net.Server.listen; Fastify's types do not name it
  await app.listen({ host: config.http.host, port: config.http.port, reusePort: threads !== null } as {
    host: string;
    port: number;
  });
  if (threads === null) return;
  try {
    await threads.start(listeningPort(app));
  } catch (error) {
    await threads.stop();
    await app.close();
    throw error;
  }
}

async function assertTopicsExist(kafka: KafkaPort, topics: readonly string[]): Promise<void> {
  const existing = new Set(await kafka.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length > 0) {
    throw new MissingTopicsError(
      `Topics missing on the broker: ${missing.join(', ')}. Create them (npm run cli -- topics create) or set TOPIC_* to the names in use.`,
    );
  }
}

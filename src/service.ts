/**
 * The running service, put together and taken apart: the Kafka port (`topics-check.ts`), the
 * read-model lifecycle (supervised projectors in worker threads, candidates, switches) with the
 * timers that drive its checks (`lifecycle/timers.ts`), the public API and its request threads
 * (`api-listen.ts`), and the admin listener. The one place, with `main.ts`, that builds clients.
 */
import type { FastifyInstance } from 'fastify';
import { listenApi } from './api-listen.js';
import type { ServiceConfig } from './config.js';
import { orderModelRoles } from '../schemas/streams.js';
import { newRequestCounter } from './shared-flags.js';
import { startProjectorThread } from './projector/projector-thread.js';
import { startReplayThread } from './projector/replay-thread.js';
import { buildAdminApp } from './http/admin.js';
import { buildApp } from './http/app.js';
import { newRateTable } from './http/rate-windows.js';
import { heldRequests, newWaitTable } from './http/wait-counts.js';
import { RequestThreads } from './http/threads/request-threads.js';
import type { KafkaPort } from './kafka/port.js';
import { systemClock } from './supervision/clock.js';
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
import { connectedPort } from './topics-check.js';
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

/** What the service holds open: each part is set once it is started, and closed by `closeHeld`. */
interface Held {
  servingLock: ServingLock;
  kafka?: KafkaPort;
  tracing?: Tracing | undefined;
  threads?: RequestThreads;
  lifecycle?: ReadModelLifecycle;
  app?: FastifyInstance;
  admin?: FastifyInstance;
  timers?: { stop(): void };
}

/**
 * Closes what is held, in this one order, on a failed start as on close: the requests first (the
 * API stops accepting and answers those in flight), then the projectors and their models, the
 * broker, the tracing, and last the serving lock. A part that fails to close does not keep the
 * parts after it open: every step runs, and the first failure is thrown at the end.
 */
async function closeHeld(held: Held): Promise<void> {
  const steps: (() => unknown)[] = [
    () => held.timers?.stop(),
    () => held.app?.close(),
    () => held.threads?.stop(),
    () => held.admin?.close(),
    () => held.lifecycle?.stop(),
    () => held.kafka?.close(),
    // after the projectors: their last batches' spans are among those exported
    () => held.tracing?.shutdown(),
    () => held.servingLock.release(),
  ];
  const failures: unknown[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length > 0) throw failures[0];
}

export async function startService(config: ServiceConfig, logger: Logger): Promise<RunningService> {
  const files = new ModelFiles(config.dataDir);
  const held: Held = { servingLock: takeServingLock(config.dataDir) };
  try {
    // Nothing is served or built here yet: what no pointer names is deleted, unless a rebuild runs.
    const leftovers = files.removeLeftovers('serving lock');
    if (leftovers.length > 0) logger.info({ files: leftovers }, 'removed the model files no pointer named');
    return await startServing(config, logger, files, held);
  } catch (error) {
    // the start's own failure is the one to report; closing runs every step whatever fails
    await closeHeld(held).catch((closing: unknown) =>
      logger.error({ err: closing }, 'closing what a failed start had opened failed'),
    );
    throw error;
  }
}

/** Starts each part, setting it in `held` as soon as it runs, so that a failed start closes it. */
async function startServing(
  config: ServiceConfig,
  logger: Logger,
  files: ModelFiles,
  held: Held,
): Promise<RunningService> {
  const kafka = await connectedPort(config, logger);
  held.kafka = kafka;
  const tracing = (await startTracing(config.tracing, logger)) ?? undefined;
  held.tracing = tracing;
  // Counted by the API, read by projectors that give way to requests (candidates catching up).
  const requests = newRequestCounter();
  const metrics: ServiceMetrics = new ServiceMetrics((): string => running.servedFile());
  const rateTable = newRateTable(Date.now());
  // One region of counters per thread that answers requests: the main thread and each request thread.
  const waitTable = newWaitTable(config.http.workers, config.http.waits.total);
  metrics.countHeld(() => heldRequests(waitTable));
  // Told every view from the start; started once the main thread listens (they take its port).
  const threads: RequestThreads | null =
    config.http.workers > 1
      ? new RequestThreads({
          count: config.http.workers - 1,
          config,
          logger,
          requests,
          rateTable,
          waitTable,
          view: (): ReadView => running.readView(),
        })
      : null;
  if (threads !== null) held.threads = threads;
  const running: ReadModelLifecycle = lifecycleOf(config, logger, files, kafka, {
    requests,
    tracing,
    events: metrics.lifecycleEvents(),
    views: threads,
  });
  held.lifecycle = running;
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
    waits: { settings: config.http.waits, table: waitTable },
    modelTopics: orderModelRoles.map((role) => config.topics[role]),
  });
  held.app = app;
  const admin = await buildAdminApp({
    health: () => running.health(),
    metrics: async () =>
      metricsText(metrics.registry, [
        await metrics.requests.collect(),
        ...((await threads?.collectMetrics()) ?? []),
      ]),
    logger,
  });
  held.admin = admin;
  await listenApi(app, config, threads);
  await admin.listen({ host: config.admin.host, port: config.admin.port });
  if (threads !== null) requestThreadMetrics(metrics.registry, threads);

  held.timers = driveLifecycle(running, { lagCheckIntervalMs: config.health.lagCheckIntervalMs, logger });

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
    close: () => closeHeld(held),
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
    topicRetention: (topics) => kafka.topicRetention(topics),
    startProjector: (spec) => startProjectorThread({ ...spec, config, logger, requests, tracing }),
    keysStallMs: config.health.keysStallMs,
    catchUp: {
      ...config.catchUp,
      start: (onProgress) => startReplayThread({ config, groupId: config.kafka.groupId, logger, onProgress }),
    },
    events: parts.events,
    ...(views === null ? {} : { views }),
  });
}

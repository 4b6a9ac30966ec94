/**
 * The running service: the live read-model generation with its projector, the
 * public API, the admin listener, and the background work that keeps them
 * honest (lag checks, stall watchdog, generation swaps, version rebuilds).
 */
import { Kafka, type Admin } from 'kafkajs';
import type { FastifyInstance } from 'fastify';
import { PROJECTION_VERSION } from '../projections/orders/migrations.js';
import { requireBrokers, type ServiceConfig } from './config.js';
import { modelLag, type PartitionLag } from './consumer/lag.js';
import { startProjectorThread, type ProjectorThread } from './consumer/projector-thread.js';
import { rebuildModel } from './consumer/rebuild.js';
import { buildAdminApp } from './http/admin.js';
import { buildApp } from './http/app.js';
import { kafkaLogCreator, type Logger } from './logger.js';
import { ServiceMetrics } from './metrics.js';
import { openReadModel, ProjectionVersionMismatch, type ReadModelDatabase } from './read-model/database.js';
import { ModelFiles } from './read-model/files.js';
import { ReadModelReader } from './read-model/reader.js';

export interface RunningService {
  app: FastifyInstance;
  admin: FastifyInstance;
  health: () => HealthReport;
  /** the live projector thread, for diagnostics; null while none runs */
  projector: () => ProjectorThread | null;
  /** Stops accepting requests, finishes in-flight ones, stops the consumer, closes the database. */
  close(): Promise<void>;
}

export interface HealthReport {
  ready: boolean;
  reasons: string[];
  file: string;
  projectionVersion: number;
  rebuilding: boolean;
  totalLag: number | null;
  partitions: PartitionLag[];
}

export class MissingTopicsError extends Error {
  readonly code = 'TOPICS_MISSING';
}

/**
 * One generation file opened for serving (reader) and, unless it is of an
 * outdated projection version, projected into by the projector thread.
 */
interface Generation {
  file: string;
  readDb: ReadModelDatabase;
  reader: ReadModelReader;
  writable: boolean;
  projector: ProjectorThread | null;
}

const pointerPollMs = 1000;

export async function startService(config: ServiceConfig, logger: Logger): Promise<RunningService> {
  const kafka = new Kafka({
    clientId: config.kafka.clientId,
    brokers: requireBrokers(config),
    logCreator: kafkaLogCreator(logger),
  });
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  await assertTopicsExist(kafkaAdmin, Object.values(config.topics));

  const files = new ModelFiles(config.dataDir);
  const metrics = new ServiceMetrics(() => live.file);
  const startProjectorOn = (generation: Generation): Promise<ProjectorThread> =>
    startProjectorThread({
      file: generation.file,
      config,
      logger,
      onBatch: (topic, _partition, outcome) => {
        // The batch is committed: the reader must look keys up again to see issues and revocations.
        if (topic === config.topics.apiKeys) generation.reader.forgetKeys();
        for (const [type, n] of Object.entries(outcome.appliedByType)) metrics.eventsApplied.inc({ type }, n);
        for (const [reason, n] of Object.entries(outcome.deadLettersByReason))
          metrics.deadLetters.inc({ reason }, n);
        metrics.batchApplySeconds.observe(outcome.durationMs / 1000);
        lastProgressAt = Date.now();
      },
    });

  /** Migrates the file (here, before any reader opens it), then opens the API's read-only connection. */
  const open = (file: string): Generation => {
    openReadModel(file).close();
    const readDb = openReadModel(file, { readonly: true });
    const reader = new ReadModelReader(readDb, { cacheKeys: true });
    return { file, readDb, reader, writable: true, projector: null };
  };
  const close = async (generation: Generation): Promise<void> => {
    await generation.projector?.stop();
    generation.readDb.close();
  };

  let current = files.currentFile();
  if (current === null) {
    current = files.newGenerationFile();
    openReadModel(current).close();
    files.promote(current);
    logger.info({ file: current }, 'created an empty read model');
  }

  let live: Generation;
  let rebuilding = false;
  let rebuildAbort: () => void = () => undefined;
  let versionRebuild: Promise<void> = Promise.resolve();
  let lastProgressAt = Date.now();
  let lastLag: { at: number; partitions: PartitionLag[] } | null = null;
  let stallSince: number | null = null;

  try {
    live = open(current);
  } catch (error) {
    if (!(error instanceof ProjectionVersionMismatch)) throw error;
    // Serve the outdated generation read-only while a new one is built from the topics.
    const readDb = openReadModel(current, { readonly: true, anyProjectionVersion: true });
    live = { file: current, readDb, reader: new ReadModelReader(readDb), writable: false, projector: null };
    logger.warn(
      { file: current, found: error.found, expected: error.expected },
      'projection version changed',
    );
  }

  const app = await buildApp({ readerOf: () => live.reader, logger, metrics, rateLimit: config.rateLimit });
  const health = (): HealthReport => {
    const reasons: string[] = [];
    const partitions = lastLag?.partitions ?? [];
    const totalLag = lastLag === null ? null : partitions.reduce((sum, p) => sum + p.lag, 0);
    if (!live.writable)
      reasons.push('the live model is of an older projection version; a rebuild is running');
    if (lastLag === null) reasons.push('lag not measured yet');
    else if (Date.now() - lastLag.at > config.health.stallTimeoutMs)
      reasons.push('lag could not be measured recently');
    if (totalLag !== null && totalLag > config.health.readyMaxLag) {
      reasons.push(`lag ${totalLag} exceeds ${config.health.readyMaxLag}`);
    }
    if (stallSince !== null && Date.now() - stallSince > config.health.stallTimeoutMs) {
      reasons.push('the consumer made no progress while lagging');
    }
    return {
      ready: reasons.length === 0,
      reasons,
      file: live.file,
      projectionVersion: PROJECTION_VERSION,
      rebuilding,
      totalLag,
      partitions,
    };
  };
  const admin = await buildAdminApp({ health, metrics, logger });

  /** Replaces the live generation: serve the new one at once, then retire the old one. */
  const swapTo = async (file: string): Promise<void> => {
    const next = open(file);
    const previous = live;
    await previous.projector?.stop();
    previous.projector = null;
    live = next;
    lastLag = null;
    lastProgressAt = Date.now();
    next.projector = await startProjectorOn(next);
    // Reads are synchronous, so no request still holds the old connections after this tick.
    setImmediate(() => {
      void close(previous).then(() => {
        const removed = files.removeGenerationsExcept(file);
        logger.info({ file, removed }, 'switched to a new read-model generation');
      });
    });
  };

  const runVersionRebuild = async (): Promise<void> => {
    rebuilding = true;
    metrics.rebuildProgress.set(0);
    const aborted = new Promise<void>((resolve) => (rebuildAbort = resolve));
    try {
      const result = await rebuildModel({
        kafka,
        topics: config.topics,
        files,
        groupId: config.kafka.groupId,
        sessionTimeoutMs: config.kafka.sessionTimeoutMs,
        logger,
        onProgress: (p) => metrics.rebuildProgress.set(p.total === 0 ? 1 : p.done / p.total),
        abort: aborted,
      });
      files.promote(result.file);
      await swapTo(result.file);
      metrics.rebuildsTotal.inc({ outcome: 'promoted' });
    } catch (error) {
      metrics.rebuildsTotal.inc({ outcome: 'failed' });
      logger.error({ err: error }, 'rebuild failed; the live model is unchanged');
    } finally {
      rebuilding = false;
      metrics.rebuildProgress.set(1);
    }
  };

  const checkLag = async (): Promise<void> => {
    const projector = live.projector;
    if (projector === null) return;
    const partitions = await modelLag(kafkaAdmin, Object.values(config.topics), (t, p) =>
      projector.storedOffset(t, p),
    );
    lastLag = { at: Date.now(), partitions };
    for (const p of partitions) {
      const labels = { topic: p.topic, partition: String(p.partition) };
      metrics.partitionLag.set(labels, p.lag);
      metrics.partitionOffset.set(labels, p.nextOffset);
    }
    const lagging = partitions.some((p) => p.lag > 0);
    const stalled = lagging && Date.now() - lastProgressAt > config.health.stallTimeoutMs;
    stallSince = stalled ? (stallSince ?? lastProgressAt) : null;
    if (stalled && live.projector !== null) {
      logger.warn(
        { lag: partitions.filter((p) => p.lag > 0) },
        'consumer stalled while lagging; restarting it',
      );
      metrics.consumerRestarts.inc();
      const stuck = live.projector;
      live.projector = null;
      await stuck
        .stop()
        .catch((error: unknown) => logger.error({ err: error }, 'stopping the stalled consumer'));
      lastProgressAt = Date.now();
      live.projector = await startProjectorOn(live);
    }
  };

  await app.listen({ host: config.http.host, port: config.http.port });
  await admin.listen({ host: config.admin.host, port: config.admin.port });
  if (live.writable) live.projector = await startProjectorOn(live);
  else versionRebuild = runVersionRebuild();

  let checking = false;
  const lagTimer = setInterval(() => {
    if (checking) return;
    checking = true;
    checkLag()
      .catch((error: unknown) => logger.warn({ err: error }, 'lag check failed'))
      .finally(() => (checking = false));
  }, config.health.lagCheckIntervalMs);
  let swapping = false;
  const pointerTimer = setInterval(() => {
    const promoted = files.currentFile();
    if (swapping || rebuilding || promoted === null || promoted === live.file) return;
    swapping = true;
    logger.info({ file: promoted }, 'a new generation was promoted');
    swapTo(promoted)
      .catch((error: unknown) => logger.error({ err: error, file: promoted }, 'switching generations failed'))
      .finally(() => (swapping = false));
  }, pointerPollMs);

  logger.info(
    { groupId: config.kafka.groupId, topics: config.topics, file: live.file, admin: config.admin.port },
    'service started',
  );

  return {
    app,
    admin,
    health,
    projector: () => live.projector,
    close: async () => {
      clearInterval(lagTimer);
      clearInterval(pointerTimer);
      rebuildAbort();
      await versionRebuild;
      await app.close();
      await admin.close();
      await close(live);
      await kafkaAdmin.disconnect();
    },
  };
}

async function assertTopicsExist(admin: Admin, topics: readonly string[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((topic) => !existing.has(topic));
  if (missing.length > 0) {
    throw new MissingTopicsError(
      `Topics missing on the broker: ${missing.join(', ')}. Create them (npm run cli -- topics create) or set TOPIC_* to the names in use.`,
    );
  }
}

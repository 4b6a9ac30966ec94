/** The CLI's subcommands. Each receives what it needs; main.ts builds it. */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { KEYS_STORE_VERSION, keysStoreSchema } from '../../projections/keys/schema.js';
import { keysSql } from '../../projections/keys/sql.js';
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';
import { operatorSql, writeSql } from '../../projections/orders/sql.js';
import type { ServiceConfig } from '../config.js';
import { EventPublisher } from '../kafka/publisher.js';
import { rebuildModel, type RebuildResult } from '../projector/rebuild.js';
import { sha256Hex } from '../http/bearer-key.js';
import { kafkaPortOf } from '../kafka/client.js';
import { type KafkaPort, offsetKey } from '../kafka/port.js';
import { lagOf } from '../supervision/lag.js';
import type { Logger } from '../logger.js';
import { openReadModel, projectionVersionOf, type ReadModelDatabase } from '../read-model/database.js';
import { keysFile } from '../keys/keys-files.js';
import { ModelFiles } from '../read-model/files.js';
import { progressReporter } from './progress.js';

export interface CommandContext {
  config: ServiceConfig;
  logger: Logger;
  /** what the command prints for the operator (stdout) */
  print: (line: string) => void;
}

/** Runs `work` with the Kafka port of the configuration, closed afterwards whatever happens. */
export async function withKafka<T>(ctx: CommandContext, work: (kafka: KafkaPort) => Promise<T>): Promise<T> {
  const kafka = kafkaPortOf(ctx.config, ctx.logger);
  try {
    return await work(kafka);
  } finally {
    await kafka.close();
  }
}

/** Runs `work` with an event publisher on the configured topics; returns how many messages it published. */
export function withPublisher(
  ctx: CommandContext,
  work: (publisher: EventPublisher) => Promise<void>,
): Promise<number> {
  return withKafka(ctx, async (kafka) => {
    const publisher = new EventPublisher(kafka, ctx.config.topics);
    await work(publisher);
    await publisher.flush();
    return publisher.published;
  });
}

/** Generates a key, publishes its SHA-256 as api_key.issued, and returns the raw key (never stored). */
export async function issueKey(
  ctx: CommandContext,
  organizationId: number,
  keyId?: string,
): Promise<{ keyId: string; rawKey: string }> {
  const rawKey = `ork_${randomBytes(24).toString('base64url')}`;
  const id = keyId ?? `key_${randomBytes(8).toString('hex')}`;
  await withPublisher(ctx, (publisher) =>
    publisher.add({
      event_id: `cli-${randomBytes(12).toString('hex')}`,
      type: 'api_key.issued',
      occurred_at: new Date().toISOString(),
      data: { key_id: id, organization_id: organizationId, key_sha256: sha256Hex(rawKey) },
    }),
  );
  return { keyId: id, rawKey };
}

export async function revokeKey(ctx: CommandContext, keyId: string): Promise<void> {
  await withPublisher(ctx, (publisher) =>
    publisher.add({
      event_id: `cli-${randomBytes(12).toString('hex')}`,
      type: 'api_key.revoked',
      occurred_at: new Date().toISOString(),
      data: { key_id: keyId },
    }),
  );
  ctx.print(`Revoked key ${keyId}; every replica refuses it once it has applied the event.`);
}

function openLive(ctx: CommandContext): { file: string; db: ReadModelDatabase } {
  const file = new ModelFiles(ctx.config.dataDir).currentFile();
  if (file === null || !existsSync(file)) {
    throw new Error(`No read model in ${ctx.config.dataDir} yet: start the service or run a rebuild first.`);
  }
  return { file, db: openReadModel(file, { readonly: true, anyProjectionVersion: true }) };
}

/**
 * The dead letters of the live model and of the keys store, which each record what they could not
 * apply or were told to skip: counted by reason, or the newest first.
 */
export function deadLetters(
  ctx: CommandContext,
  mode: 'list' | 'count',
  options: { limit: number; reason?: string },
): void {
  const { db } = openLive(ctx);
  const keysPath = keysFile(ctx.config.dataDir);
  const keys = existsSync(keysPath)
    ? openReadModel(keysPath, { readonly: true, store: keysStoreSchema })
    : null;
  const stores = keys === null ? [db] : [db, keys];
  try {
    if (mode === 'count') {
      const byReason: Record<string, number> = {};
      for (const store of stores) {
        for (const r of store.prepare(operatorSql.deadLettersByReason).all() as {
          reason: string;
          n: number;
        }[])
          byReason[r.reason] = (byReason[r.reason] ?? 0) + r.n;
      }
      const total = Object.values(byReason).reduce((sum, n) => sum + n, 0);
      ctx.print(JSON.stringify({ total, byReason }));
      return;
    }
    const rows = stores
      .flatMap(
        (store) =>
          store
            .prepare(operatorSql.newestDeadLetters)
            .all({ reason: options.reason ?? null, limit: options.limit }) as { recorded_at: string }[],
      )
      .sort((a, b) => (a.recorded_at < b.recorded_at ? 1 : a.recorded_at > b.recorded_at ? -1 : 0))
      .slice(0, options.limit);
    for (const row of rows) ctx.print(JSON.stringify(row));
  } finally {
    db.close();
    keys?.close();
  }
}

/** The keys store's file, its version and its active keys; null when the directory has none yet. */
function keysFacts(dataDir: string): Record<string, unknown> {
  const file = keysFile(dataDir);
  if (!existsSync(file)) return { keysStore: null, activeKeys: null };
  const db = openReadModel(file, { readonly: true, anyProjectionVersion: true, store: keysStoreSchema });
  try {
    const { activeKeys } = db.prepare(keysSql.activeKeys).get() as { activeKeys: number };
    const version = projectionVersionOf(db);
    return {
      keysStore: file,
      keysStoreVersion: version,
      codeKeysStoreVersion: KEYS_STORE_VERSION,
      activeKeys,
    };
  } finally {
    db.close();
  }
}

export async function status(ctx: CommandContext): Promise<void> {
  const { file, db } = openLive(ctx);
  const files = new ModelFiles(ctx.config.dataDir);
  try {
    const offsets = db.prepare(writeSql.selectOffsets).all() as {
      topic: string;
      partition: number;
      next_offset: number;
    }[];
    const report: Record<string, unknown> = {
      file,
      projectionVersion: projectionVersionOf(db),
      codeProjectionVersion: PROJECTION_VERSION,
      ...(db.prepare(operatorSql.modelCounts).get() as Record<string, number>),
      ...keysFacts(ctx.config.dataDir),
      abandonedBuilds: files.abandonedBuilds(),
      proposedNext: files.nextFile(),
      rebuildLock: files.lockHolder(),
    };
    if (ctx.config.kafka.brokers.length > 0) {
      const stored = new Map(offsets.map((o) => [offsetKey(o.topic, o.partition), o.next_offset]));
      const ends = await withKafka(ctx, (kafka) => kafka.endOffsets(Object.values(ctx.config.topics)));
      const partitions = lagOf(ends, stored);
      report['totalLag'] = partitions.reduce((sum, p) => sum + p.lag, 0);
      report['partitions'] = partitions;
    } else {
      report['offsets'] = offsets;
      report['lag'] = 'unknown: set KAFKA_BROKERS to compare with the broker';
    }
    ctx.print(JSON.stringify(report, null, 2));
  } finally {
    db.close();
  }
}

/** Where a rebuild's time went, in words: consuming (each part's end), joining, indexes and sync. */
function phasesText(phases: RebuildResult['phasesMs']): string {
  const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
  const { main, articles } = phases.reached;
  const parts =
    main === undefined || articles === undefined
      ? ''
      : ` (the orders' part done after ${s(main)}, the articles' thread after ${s(articles)})`;
  return `Consuming took ${s(phases.consume)}${parts}, joining ${s(phases.join)}, indexes and sync ${s(phases.finish)}.`;
}

export async function rebuild(ctx: CommandContext, options: { promote: boolean }): Promise<void> {
  const files = new ModelFiles(ctx.config.dataDir);
  const progress = progressReporter('rebuild', ctx.logger, 'events');
  const interrupted = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  try {
    const result = await withKafka(ctx, (kafka) =>
      rebuildModel({
        port: kafka,
        topics: ctx.config.topics,
        files,
        groupId: ctx.config.kafka.groupId,
        logger: ctx.logger,
        onProgress: (p) => progress.update(p.done, p.total, { deadLetters: p.deadLetters }),
        abort: interrupted,
        articlesThread: { config: ctx.config },
        finish: options.promote ? 'propose' : 'keep',
        removeLeftovers: true,
      }),
    );
    for (const abandoned of result.removedAbandoned) ctx.print(`Removed the abandoned build ${abandoned}.`);
    for (const leftover of result.removedLeftovers)
      ctx.print(`Removed ${leftover}, which no pointer named (no service runs).`);
    progress.update(result.done, result.total, { deadLetters: result.deadLetters });
    progress.stop();
    const seconds = result.durationMs / 1000;
    ctx.print(
      `Rebuilt ${result.done} messages in ${seconds.toFixed(1)} s (${Math.round(result.done / Math.max(seconds, 0.001))} events/s) into ${result.file}; ${result.deadLetters} dead letters met on the way. ${phasesText(result.phasesMs)}`,
    );
    if (options.promote) {
      ctx.print(
        'Proposed it as the next model (DATA_DIR/NEXT): the service catches it up to the served model in a worker thread and serves it once it has reached it on every partition (at its next start if none runs now).',
      );
    } else {
      ctx.print('Not proposed (--no-promote): the file is kept (named …-kept.sqlite); nothing deletes it.');
    }
  } finally {
    progress.stop();
  }
}

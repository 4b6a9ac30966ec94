/**
 * Rebuild by replay: consume every topic from its earliest offset up to the
 * end offsets read at the start, into a NEW generation file. The live model
 * is not touched; the caller promotes the result.
 */
import type { Kafka } from 'kafkajs';
import type { TopicRole } from '../../schemas/events.js';
import { roleOfTopic } from '../config.js';
import type { Logger } from '../logger.js';
import { closeAsStandaloneFile, openReadModel } from '../read-model/database.js';
import type { ModelFiles } from '../read-model/files.js';
import { ReadModelWriter, type BatchOutcome } from '../read-model/writer.js';
import { withAdmin } from './admin.js';
import { modelLag } from './lag.js';
import { startProjector } from './projector.js';

export interface RebuildProgress {
  /** messages applied or dead-lettered so far, up to the targets */
  done: number;
  /** messages between the log start and the end offsets read at the start */
  total: number;
  deadLetters: number;
}

export interface RebuildResult extends RebuildProgress {
  file: string;
  durationMs: number;
}

export interface RebuildOptions {
  kafka: Kafka;
  topics: Record<TopicRole, string>;
  files: ModelFiles;
  /** the group id of the replica; the rebuild uses its own, derived from it, and deletes it afterwards */
  groupId: string;
  sessionTimeoutMs: number;
  logger: Logger;
  onProgress?: (progress: RebuildProgress) => void;
  /** resolves when the rebuild should stop early (the build file is then removed) */
  abort?: Promise<void>;
}

export class RebuildAborted extends Error {
  readonly code = 'REBUILD_ABORTED';
}

export async function rebuildModel(options: RebuildOptions): Promise<RebuildResult> {
  const started = Date.now();
  // Where each partition's log starts and ends now: the rebuild's targets.
  const targets = (
    await withAdmin(options.kafka, (admin) => modelLag(admin, Object.values(options.topics), () => undefined))
  ).map((p) => ({ topic: p.topic, partition: p.partition, low: p.nextOffset, high: p.highWatermark }));
  const total = targets.reduce((sum, t) => sum + (t.high - t.low), 0);

  const building = options.files.newBuildingFile();
  const db = openReadModel(building);
  const writer = new ReadModelWriter(db, roleOfTopic(options.topics));
  let deadLetters = 0;
  const progress = (): RebuildProgress => ({
    total,
    deadLetters,
    done: targets.reduce((sum, t) => {
      const stored = writer.storedOffset(t.topic, t.partition) ?? t.low;
      return sum + Math.max(0, Math.min(stored, t.high) - t.low);
    }, 0),
  });
  const caughtUp = (): boolean =>
    targets.every((t) => t.high <= t.low || (writer.storedOffset(t.topic, t.partition) ?? t.low) >= t.high);
  options.logger.info({ file: building, total, partitions: targets.length }, 'rebuild started');

  try {
    if (!caughtUp()) {
      const groupId = `${options.groupId}.rebuild.${Date.now()}`;
      let finish: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const projector = await startProjector({
        kafka: options.kafka,
        groupId,
        sessionTimeoutMs: options.sessionTimeoutMs,
        topics: options.topics,
        writer,
        logger: options.logger.child({ component: 'rebuild' }),
        onBatch: ({ outcome }: { outcome: BatchOutcome }) => {
          deadLetters += outcome.deadLettered;
          options.onProgress?.(progress());
          if (caughtUp()) finish();
        },
      });
      try {
        const aborted = options.abort?.then(() => 'aborted' as const);
        const outcome = await Promise.race([
          finished.then(() => 'done' as const),
          ...(aborted ? [aborted] : []),
        ]);
        if (outcome === 'aborted') throw new RebuildAborted('rebuild aborted');
      } finally {
        await projector.stop();
        await deleteGroup(options.kafka, groupId);
      }
    }
    closeAsStandaloneFile(db);
  } catch (error) {
    if (db.open) db.close();
    options.files.removeBuild(building);
    throw error;
  }
  const file = options.files.finishBuild(building);
  const result = { ...progress(), file, durationMs: Date.now() - started };
  options.logger.info(result, 'rebuild finished');
  return result;
}

async function deleteGroup(kafka: Kafka, groupId: string): Promise<void> {
  // Best effort: an empty leftover group expires on the broker by itself.
  await withAdmin(kafka, (admin) => admin.deleteGroups([groupId])).catch(() => undefined);
}

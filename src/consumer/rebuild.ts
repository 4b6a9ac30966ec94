/**
 * Rebuild by replay: consume every topic from its earliest offset up to the end offsets read at the
 * start, into a NEW generation file. The served model is not touched; the caller proposes the result
 * (`ModelFiles.proposeNext`), and a running service serves it once it has caught up with the served
 * one. The directory's rebuild lock is held throughout, so two rebuilds never run at once.
 */
import type { TopicRole } from '../../schemas/events.js';
import { roleOfTopic } from '../config.js';
import type { KafkaPort } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openBuildFile } from '../read-model/database.js';
import type { ModelFiles } from '../read-model/files.js';
import { ReadModelWriter } from '../read-model/writer.js';
import { runProjection } from './projector.js';

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
  /** builds of rebuilds that died before finishing, removed under the lock */
  removedAbandoned: string[];
}

export interface RebuildOptions {
  port: KafkaPort;
  topics: Record<TopicRole, string>;
  files: ModelFiles;
  /** the group id of the replica; the rebuild uses its own, derived from it, and deletes it afterwards */
  groupId: string;
  logger: Logger;
  onProgress?: (progress: RebuildProgress) => void;
  /** resolves when the rebuild should stop early (the build file is then removed) */
  abort?: Promise<void>;
}

export class RebuildAborted extends Error {
  readonly code = 'REBUILD_ABORTED';
}

export async function rebuildModel(options: RebuildOptions): Promise<RebuildResult> {
  const release = options.files.acquireRebuildLock('rebuild');
  try {
    // Holding the lock, no other rebuild is writing: any build left in the directory was abandoned.
    const removedAbandoned = options.files.abandonedBuilds();
    for (const abandoned of removedAbandoned) options.files.removeBuild(abandoned);
    return { ...(await replay(options)), removedAbandoned };
  } finally {
    release();
  }
}

async function replay(options: RebuildOptions): Promise<Omit<RebuildResult, 'removedAbandoned'>> {
  const started = Date.now();
  // Where each partition's log starts and ends now: the rebuild's targets.
  const targets = (await options.port.endOffsets(Object.values(options.topics))).map((p) => ({
    topic: p.topic,
    partition: p.partition,
    low: p.start,
    high: p.end,
  }));
  const total = targets.reduce((sum, t) => sum + (t.high - t.low), 0);

  const building = options.files.newBuildingFile();
  // A bulk-load file (see openBuildFile): any failure below removes it.
  const build = openBuildFile(building);
  const { db } = build;
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
      const consumption = await runProjection({
        port: options.port,
        groupId,
        topics: options.topics,
        writer,
        logger: options.logger.child({ component: 'rebuild' }),
        onBatch: ({ outcome }) => {
          deadLetters += outcome.deadLettered;
          options.onProgress?.(progress());
          if (caughtUp()) finish();
        },
      });
      try {
        const aborted = options.abort?.then(() => 'aborted' as const);
        const outcome = await Promise.race([
          finished.then(() => 'done' as const),
          consumption.failed,
          ...(aborted ? [aborted] : []),
        ]);
        if (outcome === 'aborted') throw new RebuildAborted('rebuild aborted');
        if (outcome instanceof Error) throw outcome;
      } finally {
        await consumption.stop();
        await options.port.deleteGroup(groupId);
      }
    }
    build.finish();
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

/**
 * Rebuild by replay: consume every topic from its earliest offset up to the end offsets read at the
 * start, into a NEW generation file. The served model is not touched; the caller proposes the result
 * (`ModelFiles.proposeNext`), and a running service serves it once it has caught up with the served
 * one. The directory's rebuild lock is held throughout, so two rebuilds never run at once.
 */
import type { TopicRole } from '../../schemas/events.js';
import { joinPartSql } from '../../projections/orders/sql.js';
import { roleOfTopic, type ServiceConfig } from '../config.js';
import { type Consumption, type KafkaPort, offsetKey } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openBuildFile, type ReadModelDatabase } from '../read-model/database.js';
import type { ModelFiles } from '../read-model/files.js';
import { ReadModelWriter } from '../read-model/writer.js';
import { newGiveWayFlag, newRequestCounter } from '../shared-flags.js';
import { runProjection } from './projector.js';
import { startProjectorThread, type ProjectorThread } from './projector-thread.js';

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
  /**
   * Builds the articles in a thread of their own, with its own consumer and file, joined into the
   * build at the end: the two halves of the work run on two cores (the `rebuild` command does).
   * `onThread` sees the thread once started (fault tests).
   */
  articlesThread?: { config: ServiceConfig; onThread?: (thread: ProjectorThread) => void };
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
  // The articles go to a thread of their own when asked and there are any to read.
  const split =
    options.articlesThread !== undefined &&
    targets.some((t) => t.topic === options.topics.articles && t.high > t.low);

  const building = options.files.newBuildingFile();
  // Bulk-load files (see openBuildFile): any failure below removes them.
  const build = openBuildFile(building);
  const { db } = build;
  const writer = new ReadModelWriter(db, roleOfTopic(options.topics));
  const part = split ? options.files.newBuildingFile() : null;
  let thread: ProjectorThread | null = null;
  let deadLetters = 0;
  const storedOffset = (topic: string, partition: number): number | undefined =>
    topic === options.topics.articles && thread !== null
      ? thread.positions().get(offsetKey(topic, partition))
      : writer.storedOffset(topic, partition);
  const progress = (): RebuildProgress => ({
    total,
    deadLetters,
    done: targets.reduce((sum, t) => {
      const stored = storedOffset(t.topic, t.partition) ?? t.low;
      return sum + Math.max(0, Math.min(stored, t.high) - t.low);
    }, 0),
  });
  const reached = (t: (typeof targets)[number]): boolean =>
    t.high <= t.low || (storedOffset(t.topic, t.partition) ?? t.low) >= t.high;
  const caughtUp = (): boolean => targets.every(reached);
  /** whether the articles' partitions (or all the others) are caught up */
  const partCaughtUp = (articles: boolean): boolean =>
    targets.filter((t) => (t.topic === options.topics.articles) === articles).every(reached);
  options.logger.info(
    { file: building, total, partitions: targets.length, articlesThread: part },
    'rebuild started',
  );

  try {
    if (!caughtUp()) {
      const groupId = `${options.groupId}.rebuild.${Date.now()}`;
      let finish: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      // Each consumer stops as soon as its own partitions are caught up, while the other goes on: a
      // stop waits for the consumer's fetch in flight, up to seconds on a topic with nothing left.
      const stops = new Map<'main' | 'articles', Promise<void>>();
      const stopOnce = (name: 'main' | 'articles', stop: () => Promise<void>): void => {
        if (stops.has(name)) return;
        const stopping = stop();
        stopping.catch(() => undefined); // awaited below with the others
        stops.set(name, stopping);
      };
      let consumption: Consumption | null = null;
      /** Stops each half that has reached its targets, and ends the wait once both have. */
      const checkProgress = (): void => {
        if (split) {
          const main = consumption;
          const articles = thread;
          if (main !== null && partCaughtUp(false)) stopOnce('main', () => main.stop());
          if (articles !== null && partCaughtUp(true)) stopOnce('articles', () => articles.stop());
        }
        if (caughtUp()) finish();
      };
      const onBatch = (outcome: { deadLettered: number }): void => {
        deadLetters += outcome.deadLettered;
        options.onProgress?.(progress());
        checkProgress();
      };
      consumption = await runProjection({
        port: options.port,
        groupId,
        topics: options.topics,
        // with the articles in their thread, every other topic
        ...(split
          ? { roles: (Object.keys(options.topics) as TopicRole[]).filter((role) => role !== 'articles') }
          : {}),
        writer,
        logger: options.logger.child({ component: 'rebuild' }),
        ...(options.articlesThread === undefined
          ? {}
          : { maxMessageBytes: options.articlesThread.config.limits.messageBytes }),
        onBatch: ({ outcome }) => onBatch(outcome),
        operatorSkips: () => options.files.operatorSkips(),
      });
      const main = consumption;
      try {
        if (part !== null && options.articlesThread !== undefined) {
          thread = await startProjectorThread({
            file: part,
            groupId: `${groupId}.articles`,
            config: options.articlesThread.config,
            logger: options.logger.child({ component: 'rebuild', part: 'articles' }),
            requests: newRequestCounter(),
            giveWay: newGiveWayFlag(false),
            onBatch: (_topic, _partition, outcome) => onBatch(outcome),
            part: { roles: ['articles'], logLevel: options.logger.level },
          });
          options.articlesThread.onThread?.(thread);
          // Batches the thread applied before its handle was set were checked without its positions.
          checkProgress();
        }
        const aborted = options.abort?.then(() => 'aborted' as const);
        const outcome = await Promise.race([
          finished.then(() => 'done' as const),
          main.failed,
          ...(thread === null ? [] : [thread.failed]),
          ...(aborted ? [aborted] : []),
        ]);
        if (outcome === 'aborted') throw new RebuildAborted('rebuild aborted');
        if (outcome instanceof Error) throw outcome;
      } finally {
        const articles = thread;
        stopOnce('main', () => main.stop());
        if (articles !== null) stopOnce('articles', () => articles.stop());
        await Promise.all(stops.values());
        await options.port.deleteGroup(groupId);
        if (thread !== null) await options.port.deleteGroup(`${groupId}.articles`);
      }
    }
    if (part !== null) joinPart(db, part);
    build.finish();
  } catch (error) {
    if (db.open) db.close();
    options.files.removeBuild(building);
    if (part !== null) options.files.removeBuild(part);
    throw error;
  }
  const file = options.files.finishBuild(building);
  if (part !== null) options.files.removeBuild(part);
  const result = { ...progress(), file, durationMs: Date.now() - started };
  options.logger.info(result, 'rebuild finished');
  return result;
}

/** Joins the part built in `partFile` (closed) into the build, in one transaction. */
function joinPart(db: ReadModelDatabase, partFile: string): void {
  db.prepare('ATTACH DATABASE ? AS part').run(partFile);
  try {
    db.transaction(() => {
      for (const sql of joinPartSql) db.exec(sql);
    })();
  } finally {
    db.exec('DETACH DATABASE part');
  }
}

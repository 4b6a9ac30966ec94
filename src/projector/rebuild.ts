/**
 * Rebuild by replay: consume every topic from its earliest offset up to the end offsets read at the
 * start, into a NEW generation file. The served model is not touched; the caller proposes the result
 * (`ModelFiles.proposeNext`), and a running service serves it once it has caught up with the served
 * one. The directory's rebuild lock is held throughout, so two rebuilds never run at once. How far
 * it has come is reckoned in `rebuild-progress.ts`.
 */
import { orderModelRoles, type TopicRole } from '../../schemas/streams.js';
import { roleOfTopic, type ServiceConfig } from '../config.js';
import type { Consumption, KafkaPort } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { joinPart, openBuildFile, type BuildFile } from '../read-model/database.js';
import type { ModelFiles } from '../read-model/files.js';
import { ReadModelWriter } from '../read-model/writer.js';
import { newGiveWayFlag, newRequestCounter } from '../shared-flags.js';
import { runProjection } from './projector.js';
import { startProjectorThread, type ProjectorThread } from './projector-thread.js';
import {
  phasesOf,
  progressOf,
  reachedTargets,
  type RebuildProgress,
  type ReplayPositions,
  type Target,
} from './rebuild-progress.js';

export interface RebuildResult extends RebuildProgress {
  file: string;
  durationMs: number;
  phasesMs: ReturnType<typeof phasesOf>;
  /** builds of rebuilds that died before finishing, removed under the lock */
  removedAbandoned: string[];
  /** model files no pointer named, removed under both locks (`removeLeftovers`) */
  removedLeftovers: string[];
}

export interface RebuildOptions {
  port: KafkaPort;
  topics: Record<TopicRole, string>;
  files: ModelFiles;
  /** the group id of the replica; the rebuild uses its own, derived from it, and deletes it afterwards */
  groupId: string;
  logger: Logger;
  onProgress?: (progress: RebuildProgress) => void;
  /** who holds the rebuild lock, as another rebuild is told (default: the `rebuild` command) */
  lockReason?: string;
  /** resolves when the rebuild should stop early (the build file is then removed) */
  abort?: Promise<void>;
  /** the finished build, still under the lock: proposed in `NEXT`, or kept (default: the caller proposes it) */
  finish?: 'propose' | 'keep';
  /**
   * Deletes the model files no pointer names, before the build and after its proposal, when no
   * service serves the directory (the `rebuild` command; never a service's own replay).
   */
  removeLeftovers?: boolean;
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
  const release = options.files.acquireRebuildLock(options.lockReason ?? 'rebuild');
  try {
    // Holding the lock, no other rebuild is writing: any build left in the directory was abandoned.
    const removedAbandoned = options.files.abandonedBuilds();
    for (const abandoned of removedAbandoned) options.files.remove(abandoned);
    const sweep = (): string[] =>
      options.removeLeftovers === true ? options.files.removeLeftovers('rebuild lock') : [];
    const removedBefore = sweep();
    const result = await replay(options);
    // Proposed under the lock: no sweep can ever see it finished but unproposed.
    if (options.finish === 'propose') options.files.proposeNext(result.file);
    // the proposal this one replaced, when no service runs to retire it
    return { ...result, removedAbandoned, removedLeftovers: [...removedBefore, ...sweep()] };
  } finally {
    release();
  }
}

/** What the consumers of a replay share: where each partition stands, and the articles' thread. */
interface ReplayState extends ReplayPositions {
  options: RebuildOptions;
  /** the articles' own file, when they are built in a thread of their own */
  part: string | null;
  build: BuildFile;
}

async function replay(
  options: RebuildOptions,
): Promise<Omit<RebuildResult, 'removedAbandoned' | 'removedLeftovers'>> {
  const started = Date.now();
  // Where each partition's log starts and ends now: the rebuild's targets.
  const targets: Target[] = (
    await options.port.endOffsets(orderModelRoles.map((role) => options.topics[role]))
  ).map((p) => ({
    topic: p.topic,
    partition: p.partition,
    low: p.start,
    high: p.end,
  }));
  // The articles go to a thread of their own when asked and there are any to read.
  const split =
    options.articlesThread !== undefined &&
    targets.some((t) => t.topic === options.topics.articles && t.high > t.low);
  const building = options.files.newBuildingFile();
  // Bulk-load files (see openBuildFile): any failure below removes them.
  const build = openBuildFile(building);
  const { db } = build;
  const state: ReplayState = {
    options,
    targets,
    articlesTopic: options.topics.articles,
    writer: new ReadModelWriter(db, roleOfTopic(options.topics)),
    part: split ? options.files.newBuildingFile() : null,
    thread: null,
    deadLetters: 0,
    started,
    reachedMs: {},
    build,
  };
  const { part } = state;
  options.logger.info(
    { file: building, total: progressOf(state).total, partitions: targets.length, articlesThread: part },
    'rebuild started',
  );
  const at = { consumed: 0, joined: 0, finished: 0 };
  try {
    if (!reachedTargets(state)) await consumeToTargets(state);
    at.consumed = Date.now();
    if (part !== null) joinPart(db, part);
    at.joined = Date.now();
    build.finish();
    at.finished = Date.now();
  } catch (error) {
    if (db.open) db.close();
    options.files.remove(building);
    if (part !== null) options.files.remove(part);
    throw error;
  }
  const file = options.files.finishBuild(building, { kept: options.finish === 'keep' });
  if (part !== null) options.files.remove(part);
  const durationMs = Date.now() - started;
  const result = { ...progressOf(state), file, durationMs, phasesMs: phasesOf(state, at) };
  options.logger.info(result, 'rebuild finished');
  return result;
}

/** How long the broker may hold a rebuild's fetch that finds nothing: a stop waits for the one in flight. */
export const rebuildFetchMaxWaitMs = 100;

/**
 * Consumes until every partition has reached its target: one consumer for every topic, or, split,
 * one for every topic but the articles and a projector thread for the articles. Each stops as soon
 * as its own partitions are caught up, while the other goes on.
 */
async function consumeToTargets(state: ReplayState): Promise<void> {
  const { options, part } = state;
  const groupId = `${options.groupId}.rebuild.${Date.now()}`;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const stops = new Map<'main' | 'articles', Promise<void>>();
  /** Stops a half once; true when this call stopped it. */
  const stopOnce = (name: 'main' | 'articles', stop: () => Promise<void>): boolean => {
    if (stops.has(name)) return false;
    state.reachedMs[name] = Date.now() - state.started;
    const stopping = stop();
    stopping.catch(() => undefined); // awaited below with the others
    stops.set(name, stopping);
    return true;
  };
  let consumption: Consumption | null = null;
  /** Stops each half that has reached its targets, and ends the wait once both have. */
  const checkProgress = (): void => {
    if (part !== null) {
      const main = consumption;
      const articles = state.thread;
      // Once the orders are whole, their indexes are made, while the articles' thread goes on.
      if (main !== null && reachedTargets(state, false) && stopOnce('main', () => main.stop()))
        state.build.indexTable('orders');
      if (articles !== null && reachedTargets(state, true)) stopOnce('articles', () => articles.stop());
    }
    if (reachedTargets(state)) finish();
  };
  const onBatch = (outcome: { deadLettered: number }): void => {
    state.deadLetters += outcome.deadLettered;
    options.onProgress?.(progressOf(state));
    checkProgress();
  };
  consumption = await runProjection({
    port: options.port,
    groupId,
    topics: options.topics,
    // with the articles in their thread, every other topic of an orders model
    roles: part !== null ? orderModelRoles.filter((role) => role !== 'articles') : orderModelRoles,
    writer: state.writer,
    logger: options.logger.child({ component: 'rebuild' }),
    maxWaitMs: rebuildFetchMaxWaitMs,
    ...(options.articlesThread === undefined
      ? {}
      : { maxMessageBytes: options.articlesThread.config.limits.messageBytes }),
    onBatch: ({ outcome }) => onBatch(outcome),
    operatorSkips: () =>
      options.files.operatorSkips({
        onImport: (report) => options.logger.warn(report, 'imported the skips of skipped-batches.json'),
      }),
    acceptedLosses: () => options.files.acceptedLosses(),
  });
  const main = consumption;
  try {
    if (part !== null && options.articlesThread !== undefined) {
      state.thread = await startProjectorThread({
        file: part,
        groupId: `${groupId}.articles`,
        config: options.articlesThread.config,
        logger: options.logger.child({ component: 'rebuild', part: 'articles' }),
        requests: newRequestCounter(),
        giveWay: newGiveWayFlag(false),
        fetchMaxWaitMs: rebuildFetchMaxWaitMs,
        onBatch: (_topic, _partition, outcome) => onBatch(outcome),
        part: { roles: ['articles'], logLevel: options.logger.level },
      });
      options.articlesThread.onThread?.(state.thread);
      // Batches the thread applied before its handle was set were checked without its positions.
      checkProgress();
    }
    const aborted = options.abort?.then(() => 'aborted' as const);
    const outcome = await Promise.race([
      finished.then(() => 'done' as const),
      main.failed,
      ...(state.thread === null ? [] : [state.thread.failed]),
      ...(aborted ? [aborted] : []),
    ]);
    if (outcome === 'aborted') throw new RebuildAborted('rebuild aborted');
    if (outcome instanceof Error) throw outcome;
  } finally {
    const articles = state.thread;
    stopOnce('main', () => main.stop());
    if (articles !== null) stopOnce('articles', () => articles.stop());
    await Promise.all(stops.values());
    await options.port.deleteGroup(groupId);
    if (articles !== null) await options.port.deleteGroup(`${groupId}.articles`);
  }
}

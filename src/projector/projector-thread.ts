/** Runs a projector in a worker thread and gives the main thread its handle (positions, failure, stop). */
import { Worker } from 'node:worker_threads';
import type { TopicRole } from '../../schemas/streams.js';
import type { ServiceConfig } from '../config.js';
import { type UnreadableBatch, offsetKey } from '../kafka/port.js';
import type { ProjectorSpec, RunningProjector } from './projector-handle.js';
import type { Logger } from '../logger.js';
import type { Tracing } from '../tracing/spans.js';
import type { AppliedBatchFacts } from './projector.js';

export interface ProjectorWorkerData {
  file: string;
  groupId: string;
  config: ServiceConfig;
  /** shared memory: the API's request count and this generation's give-way flag (`pacing.ts`) */
  requests: Int32Array;
  giveWay: Int32Array;
  /** What a rebuild's own thread changes (`rebuild.ts`); a served model's projector has none of it. */
  part?: RebuildPart;
  /** the topics it reads, by role (default: an orders model's, `projectorRoles` in `subscriptions.ts`) */
  roles?: readonly TopicRole[];
  commits?: Int32Array;
  /** the broker answers an empty fetch within `maxWaitMs`; `report`: posts each fetch that came back (`fetched`) */
  fetches?: { maxWaitMs: number; report: boolean };
}

/**
 * A thread that builds part of a rebuild: the topics of `roles` only, into a new build file
 * (`openBuildFile`: no journal on disk, no secondary indexes; the rebuild joins its tables into its
 * own file), at the process's priority rather than below requests.
 */
export interface RebuildPart {
  roles: readonly TopicRole[];
  /** the rebuild's own log level: the thread logs to stderr, as the operator command does */
  logLevel: string;
}

export type ToProjectorThread = { type: 'stop' } | { type: 'pause' };
export type FromProjectorThread =
  | { type: 'started'; offsets: { topic: string; partition: number; nextOffset: number }[] }
  | ({ type: 'batch' } & AppliedBatchFacts)
  | { type: 'failed'; message: string; stack?: string }
  | { type: 'warning'; name: string; message: string }
  | { type: 'unreadable'; batch: UnreadableBatch }
  | { type: 'fetched' }
  | { type: 'stopped' };

/**
 * Built JavaScript (`npm run build`, what production runs) starts the worker module as it is; from
 * the TypeScript sources (development, tests) a plain-JavaScript entry loads it through tsx, which
 * the main thread's loader does not reach.
 */
const workerUrl = import.meta.url.endsWith('.js')
  ? new URL('./projector-worker.js', import.meta.url)
  : new URL('./projector-worker.mjs', import.meta.url);

export class ProjectorThreadFailed extends Error {
  readonly code = 'PROJECTOR_THREAD_FAILED';
}

/** A projector thread; `terminate` ends it as a crash would (fault tests and diagnostics). */
export type ProjectorThread = RunningProjector & { terminate(): Promise<void> };

export function startProjectorThread(
  spec: ProjectorSpec & {
    config: ServiceConfig;
    logger: Logger;
    requests: Int32Array;
    part?: RebuildPart;
    /** each applied batch becomes a span, recorded here in the main thread from what the thread posts (`tracing/otel.ts`) */
    tracing?: Tracing | undefined;
  },
): Promise<ProjectorThread> {
  const worker = new Worker(workerUrl, {
    workerData: {
      file: spec.file,
      groupId: spec.groupId,
      config: spec.config,
      requests: spec.requests,
      giveWay: spec.giveWay,
      ...(spec.part === undefined ? {} : { part: spec.part }),
      ...(spec.roles === undefined ? {} : { roles: spec.roles }),
      ...(spec.commits === undefined ? {} : { commits: spec.commits }),
      ...(spec.onFetched === undefined && spec.fetchMaxWaitMs === undefined
        ? {}
        : { fetches: { maxWaitMs: spec.fetchMaxWaitMs ?? 500, report: spec.onFetched !== undefined } }),
    } satisfies ProjectorWorkerData,
    // Not the parent's flags: a test runner's loader flags must not reach the thread.
    execArgv: [],
    // Batches are short-lived garbage; a bounded heap makes V8 collect it instead of growing the process
    // (the bound was chosen by measuring peak memory while ingesting under load: bench/README).
    resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 },
  });
  const positions = new Map<string, number>();
  let stopping = false;
  let fail: (error: Error) => void = () => undefined;
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  let exited: () => void = () => undefined;
  const whenExited = new Promise<void>((resolve) => (exited = resolve));

  return new Promise<ProjectorThread>((resolve, reject) => {
    const handle: ProjectorThread = {
      terminate: async () => {
        await worker.terminate();
      },
      positions: () => positions,
      failed,
      pause: () => worker.postMessage({ type: 'pause' } satisfies ToProjectorThread),
      stop: async () => {
        if (!stopping) {
          stopping = true;
          worker.postMessage({ type: 'stop' } satisfies ToProjectorThread);
        }
        await whenExited;
      },
    };
    // Stopped while starting: the thread is asked to stop (it gives up a consumer still joining its
    // group within its own bound), and the start rejects once the thread has ended.
    let started = false;
    const giveUp = (): void => {
      if (started) return;
      void handle.stop().then(() => reject(new ProjectorThreadFailed('stopped while starting')));
    };
    if (spec.signal?.aborted === true) giveUp();
    else spec.signal?.addEventListener('abort', giveUp, { once: true });
    const failWith = (error: Error): void => {
      reject(error);
      if (!stopping) fail(error);
    };
    worker.on('message', (message: FromProjectorThread) => {
      switch (message.type) {
        case 'started':
          started = true;
          spec.signal?.removeEventListener('abort', giveUp);
          for (const o of message.offsets) positions.set(offsetKey(o.topic, o.partition), o.nextOffset);
          resolve(handle);
          return;
        case 'batch':
          if (message.outcome.nextOffset !== null) {
            positions.set(offsetKey(message.topic, message.partition), message.outcome.nextOffset);
          }
          spec.onBatch(message.topic, message.partition, message.outcome);
          spec.tracing?.batchApplied({
            topic: message.topic,
            partition: message.partition,
            groupId: spec.groupId,
            file: spec.file,
            ...(message.firstOffset === undefined ? {} : { firstOffset: message.firstOffset }),
            ...(message.lastOffset === undefined ? {} : { lastOffset: message.lastOffset }),
            messages: message.messages,
            events: message.outcome.applied,
            deadLetters: message.outcome.deadLettered,
            unchanged: message.outcome.unchanged,
            alreadyApplied: message.outcome.alreadyApplied,
            nextOffset: message.outcome.nextOffset,
            startedAt: message.startedAt,
            endedAt: message.endedAt,
          });
          return;
        case 'failed': {
          const error = new ProjectorThreadFailed(message.message);
          if (message.stack !== undefined) error.stack = message.stack;
          failWith(error);
          void worker.terminate();
          return;
        }
        case 'unreadable':
          spec.onUnreadable?.(message.batch);
          return;
        case 'fetched':
          spec.onFetched?.();
          return;
        case 'warning':
          // A thread's process warnings belong to the process: logged, and raised where monitoring sees them.
          spec.logger.warn({ warning: message.name }, message.message);
          process.emitWarning(message.message, { type: message.name, code: 'PROJECTOR_THREAD' });
          return;
        case 'stopped':
          // The thread has closed its database and clients: nothing of it is still needed.
          void worker.terminate();
          return;
      }
    });
    worker.on('error', (error: Error) => failWith(error));
    worker.on('exit', (code) => {
      exited();
      if (!stopping) failWith(new ProjectorThreadFailed(`the projector thread exited with code ${code}`));
    });
  });
}

/**
 * A catch-up by replay, run by the service in a worker thread: the `rebuild` command's machinery
 * (`rebuild.ts`: a bulk-load file, the articles in a thread of their own) building a new model from
 * the start of every topic, while the served model keeps answering. The main thread gets its
 * progress and the new file, which it proposes like the command's result.
 */
import { Worker } from 'node:worker_threads';
import type { ServiceConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { RebuildProgress } from './rebuild-progress.js';

export interface ReplayWorkerData {
  config: ServiceConfig;
  groupId: string;
}

export type ToReplayThread = { type: 'abort' };
export type FromReplayThread =
  | { type: 'progress'; progress: RebuildProgress }
  | { type: 'finished'; file: string; progress: RebuildProgress; durationMs: number }
  | { type: 'failed'; message: string; code?: string };

/** What a finished replay built. */
export interface ReplayResult extends RebuildProgress {
  file: string;
  durationMs: number;
}

export interface ReplayThread {
  /** the built file, once the replay has finished; rejects when it failed, was aborted or its thread died */
  done: Promise<ReplayResult>;
  /** the last progress it reported; null before the first */
  progress(): RebuildProgress | null;
  /** asks it to give up (the build file is removed) and resolves once the thread has ended */
  abort(): Promise<void>;
  /** ends the thread as a crash would (fault tests) */
  terminate(): Promise<void>;
}

export class ReplayFailed extends Error {
  constructor(
    message: string,
    readonly code: string = 'REPLAY_FAILED',
  ) {
    super(message);
  }
}

/** How long an aborted replay may take to end by itself before its thread is ended. */
export const abortWaitMs = 10_000;

const workerUrl = import.meta.url.endsWith('.js')
  ? new URL('./replay-worker.js', import.meta.url)
  : new URL('./replay-worker.mjs', import.meta.url);

export function startReplayThread(spec: {
  config: ServiceConfig;
  groupId: string;
  logger: Logger;
  onProgress?: (progress: RebuildProgress) => void;
}): ReplayThread {
  const worker = new Worker(workerUrl, {
    workerData: { config: spec.config, groupId: spec.groupId } satisfies ReplayWorkerData,
    // Not the parent's flags: a test runner's loader flags must not reach the thread.
    execArgv: [],
    // The projector threads' bounds (`projector-thread.ts`): batches are short-lived garbage, and an
    // unbounded heap grew the replica by some 130 MB during a replay (bench/README.md, "Catch-up").
    resourceLimits: { maxOldGenerationSizeMb: 96, maxYoungGenerationSizeMb: 16 },
  });
  let last: RebuildProgress | null = null;
  let settle: { resolve: (result: ReplayResult) => void; reject: (error: Error) => void };
  const done = new Promise<ReplayResult>((resolve, reject) => (settle = { resolve, reject }));
  done.catch(() => undefined); // the caller awaits it; an abort is not an unhandled rejection
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.on('message', (message: FromReplayThread) => {
    switch (message.type) {
      case 'progress':
        last = message.progress;
        spec.onProgress?.(message.progress);
        return;
      case 'finished':
        last = message.progress;
        settle.resolve({ ...message.progress, file: message.file, durationMs: message.durationMs });
        return;
      case 'failed':
        settle.reject(new ReplayFailed(message.message, message.code));
        return;
    }
  });
  worker.on('error', (error: Error) => settle.reject(new ReplayFailed(error.message)));
  worker.on('exit', (code) =>
    // after a 'finished' or 'failed' this changes nothing
    settle.reject(new ReplayFailed(`the replay thread exited with code ${code}`, 'REPLAY_THREAD_EXITED')),
  );
  return {
    done,
    progress: () => last,
    abort: async () => {
      worker.postMessage({ type: 'abort' } satisfies ToReplayThread);
      // A replay is aborted between batches; one stuck in a call to a broker that does not answer
      // is ended instead. Its lock's lease runs out, and the next rebuild removes its build file.
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        exited.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), abortWaitMs))),
      ]);
      clearTimeout(timer);
      if (!ended) await worker.terminate();
    },
    terminate: async () => {
      await worker.terminate();
    },
  };
}

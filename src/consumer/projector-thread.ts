/** The main thread's handle on the projector thread: stored offsets, batch outcomes, stop and pause. */
import { Worker } from 'node:worker_threads';
import type { ServiceConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { offsetKey, type BatchOutcome } from '../read-model/writer.js';

export type ToProjectorThread = { type: 'stop' } | { type: 'pause' };
export type FromProjectorThread =
  | { type: 'started'; offsets: { topic: string; partition: number; nextOffset: number }[] }
  | { type: 'batch'; topic: string; partition: number; outcome: BatchOutcome }
  | { type: 'stopped' };

export interface ProjectorThread {
  /** next offset per partition as committed with the model (what the thread last reported) */
  storedOffset(topic: string, partition: number): number | undefined;
  /** stops consuming without committing anything partial, closes the write connection, ends the thread */
  stop(): Promise<void>;
  /** pauses fetching on every topic (diagnostics: the stall watchdog will notice and restart the thread) */
  pause(): void;
}

/** A plain-JavaScript entry that loads `projector-worker.ts` through tsx inside the thread. */
const workerUrl = new URL('./projector-worker.mjs', import.meta.url);

export async function startProjectorThread(options: {
  file: string;
  config: ServiceConfig;
  logger: Logger;
  onBatch: (topic: string, partition: number, outcome: BatchOutcome) => void;
}): Promise<ProjectorThread> {
  const worker = new Worker(workerUrl, {
    workerData: { file: options.file, config: options.config },
    // Not the parent's flags: a test runner's loader flags must not reach the thread.
    execArgv: [],
    // Batches are short-lived garbage; a bounded heap makes V8 collect it instead of growing the process.
    resourceLimits: { maxOldGenerationSizeMb: 192, maxYoungGenerationSizeMb: 16 },
  });
  const offsets = new Map<string, number>();
  let stopped: () => void = () => undefined;
  const whenStopped = new Promise<void>((resolve) => (stopped = resolve));
  const started = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: FromProjectorThread) => {
      switch (message.type) {
        case 'started':
          for (const o of message.offsets) offsets.set(offsetKey(o.topic, o.partition), o.nextOffset);
          resolve();
          return;
        case 'batch':
          if (message.outcome.nextOffset !== null) {
            offsets.set(offsetKey(message.topic, message.partition), message.outcome.nextOffset);
          }
          options.onBatch(message.topic, message.partition, message.outcome);
          return;
        case 'stopped':
          stopped();
          return;
      }
    });
    worker.on('error', (error) => {
      options.logger.error({ err: error }, 'projector thread failed');
      reject(error);
    });
    worker.on('exit', (code) => {
      stopped();
      if (code !== 0) options.logger.warn({ code }, 'projector thread exited');
    });
  });
  await started;
  return {
    storedOffset: (topic, partition) => offsets.get(offsetKey(topic, partition)),
    pause: () => worker.postMessage({ type: 'pause' } satisfies ToProjectorThread),
    stop: async () => {
      worker.postMessage({ type: 'stop' } satisfies ToProjectorThread);
      await whenStopped;
      await worker.terminate();
    },
  };
}

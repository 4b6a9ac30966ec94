/**
 * The catch-up replay's thread (`replay-thread.ts`): `rebuildModel` with the articles in a thread of
 * its own, below the requests' priority, reporting its progress to the main thread.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { kafkaPortOf } from '../kafka/client.js';
import { createLogger } from '../logger.js';
import { ModelFiles } from '../read-model/files.js';
import { PROJECTOR_THREAD_NICE } from './pacing.js';
import { rebuildModel } from './rebuild.js';
import type { RebuildProgress } from './rebuild-progress.js';
import type { FromReplayThread, ReplayWorkerData, ToReplayThread } from './replay-thread.js';

const { config, groupId } = workerData as ReplayWorkerData;
const port = parentPort;
if (port === null) throw new Error('replay-worker must run as a worker thread');
const post = (message: FromReplayThread): void => port.postMessage(message);
const logger = createLogger(config.logLevel).child({ component: 'catch-up replay' });

try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), PROJECTOR_THREAD_NICE);
} catch (error) {
  logger.debug({ err: error }, 'the replay thread keeps the process priority');
}

let abort: () => void = () => undefined;
const aborted = new Promise<void>((resolve) => (abort = resolve));
// The one message it is sent: give up.
port.on('message', (_message: ToReplayThread) => abort());

/** Progress posted at most this often: the main thread logs it and exposes it as a gauge. */
const progressEveryMs = 500;
let postedAt = 0;
const kafka = kafkaPortOf(config, logger);
try {
  const result = await rebuildModel({
    port: kafka,
    topics: config.topics,
    files: new ModelFiles(config.dataDir),
    groupId,
    logger,
    lockReason: 'catch-up replay by the service',
    abort: aborted,
    onProgress: (progress: RebuildProgress) => {
      const now = performance.now();
      // The last report always goes: the lifecycle's watchdog leaves a replay that has read every
      // message alone while it builds its indexes, with nothing more to report.
      if (now - postedAt < progressEveryMs && progress.done < progress.total) return;
      postedAt = now;
      post({ type: 'progress', progress });
    },
    articlesThread: { config },
  });
  const { file, durationMs, done, total, deadLetters } = result;
  post({ type: 'finished', file, durationMs, progress: { done, total, deadLetters } });
} catch (error) {
  const e = error instanceof Error ? error : new Error(String(error));
  const code = (e as { code?: unknown }).code;
  post({ type: 'failed', message: e.message, ...(typeof code === 'string' ? { code } : {}) });
} finally {
  await kafka.close().catch(() => undefined);
  port.close();
}

/**
 * The projector's thread: it owns a Kafka consumer and the model's only write connection, so
 * applying batches (synchronous SQLite transactions) never blocks the event loop that answers API
 * requests. It ends by itself when its consumption fails; the main thread's supervisor restarts it.
 */
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { roleOfTopic } from '../config.js';
import { kafkaPortOf } from '../kafka/client.js';
import type { Consumption } from '../kafka/port.js';
import { createLogger } from '../logger.js';
import { openBuildFile, openReadModel } from '../read-model/database.js';
import { ModelFiles } from '../read-model/files.js';
import { ReadModelWriter } from '../read-model/writer.js';
import { maxPauseMs, Pacer, pause, PROJECTOR_THREAD_NICE } from './pacing.js';
import { runProjection } from './projector.js';
import { feedsKeys, projectorRoles } from './subscriptions.js';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import type { FromProjectorThread, ProjectorWorkerData, ToProjectorThread } from './projector-thread.js';

const { file, groupId, config, requests, giveWay, part, roles, fetches, commits } =
  workerData as ProjectorWorkerData;
const consumed = projectorRoles({ part, roles });
const port = parentPort;
if (port === null) throw new Error('projector-worker must run as a worker thread');
const post = (message: FromProjectorThread): void => port.postMessage(message);

// A rebuild's thread keeps stdout for the operator command's answer, as the command does.
const logger =
  part === undefined
    ? createLogger(config.logLevel).child({ component: 'projector', file })
    : createLogger(part.logLevel, 2).child({ component: 'rebuild', part: part.roles, file });
process.on('warning', (warning) => post({ type: 'warning', name: warning.name, message: warning.message }));

// The keys store's thread keeps the process's priority: a revocation waits for no request. Every
// other one, a rebuild's articles thread included, runs below the requests.
if (!feedsKeys(consumed)) {
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(threadId, PROJECTOR_THREAD_NICE);
  } catch (error) {
    logger.debug({ err: error }, 'the projector thread keeps the process priority');
  }
}

const consumedTopics = new Set(consumed.map((role) => config.topics[role]));
// The keys consumer writes the keys store, with a schema and a version of its own; every other one an orders model.
const keysStore = feedsKeys(consumed);
const db =
  part === undefined
    ? openReadModel(file, keysStore ? { store: keysStoreSchema } : {})
    : openBuildFile(file).db;
// A revocation committed to the keys store survives an OS crash too: the store never moves back.
if (feedsKeys(consumed)) db.pragma('synchronous = FULL');
const writer = new ReadModelWriter(db, roleOfTopic(config.topics), undefined, commits);
const kafka = kafkaPortOf(config, logger);
const skipsOf = new ModelFiles(config.dataDir);
const pacer = new Pacer(requests, giveWay, {
  share: config.candidates.workShare,
  maxPauseMs,
});
/** Fetches reported at most this often: enough for a watchdog counting in seconds. */
const fetchReportMs = 250;
let fetchReportedAt = 0;
const starting: Promise<Consumption> = runProjection({
  port: kafka,
  groupId,
  topics: config.topics,
  roles: consumed,
  writer,
  logger,
  maxMessageBytes: config.limits.messageBytes,
  onBatch: (batch) => post({ type: 'batch', ...batch }),
  onUnreadable: (batch) => post({ type: 'unreadable', batch }),
  operatorSkips: () =>
    skipsOf.operatorSkips({
      onImport: (report) => logger.warn(report, 'imported the skips of skipped-batches.json'),
    }),
  acceptedLosses: () => skipsOf.acceptedLosses(),
  ...(fetches === undefined
    ? {}
    : {
        maxWaitMs: fetches.maxWaitMs,
        ...(fetches.report
          ? {
              onFetched: () => {
                const now = performance.now();
                if (now - fetchReportedAt < fetchReportMs) return;
                fetchReportedAt = now;
                post({ type: 'fetched' });
              },
            }
          : {}),
      }),
  // The keys are never paced: an issue or a revocation waits for nothing.
  ...(feedsKeys(consumed)
    ? {}
    : {
        afterBatch: (startedAt: number) => {
          const ms = pacer.pauseAfterBatch(startedAt, performance.now());
          return ms > 0 ? pause(giveWay, ms) : undefined;
        },
      }),
});
let ending = false;
const startWaitOnStopMs = 2000;

/** Stops consuming (once started), closes the write connection and the thread's clients; `report` goes last. */
async function end(report: FromProjectorThread): Promise<void> {
  if (ending) return;
  ending = true;
  // A consumer still joining its group (a broker gone or frozen) is not waited for beyond this: the
  // thread ends, and its client with it; the model needs no goodbye.
  let timer: NodeJS.Timeout | undefined;
  const consumption = await Promise.race([
    starting.catch(() => null),
    new Promise<null>((resolve) => {
      timer = setTimeout(() => {
        logger.warn({ waitedMs: startWaitOnStopMs }, 'the consumer was still starting; stopping without it');
        resolve(null);
      }, startWaitOnStopMs);
    }),
  ]);
  clearTimeout(timer);
  await consumption?.stop().catch((error: unknown) => logger.warn({ err: error }, 'stopping the consumer'));
  await kafka.close().catch(() => undefined);
  db.close();
  post(report);
  port?.close();
}

function failed(error: unknown): Promise<void> {
  const e = error instanceof Error ? error : new Error(String(error));
  return end({ type: 'failed', message: e.message, ...(e.stack === undefined ? {} : { stack: e.stack }) });
}

port.on('message', (message: ToProjectorThread) => {
  switch (message.type) {
    case 'pause':
      void starting.then(
        (consumption) => consumption.pause(),
        () => undefined,
      );
      return;
    case 'stop':
      void end({ type: 'stopped' });
      return;
  }
});

starting.then((consumption) => {
  if (ending) return;
  post({ type: 'started', offsets: writer.storedOffsets().filter((o) => consumedTopics.has(o.topic)) });
  void consumption.failed.then(failed);
}, failed);

/**
 * The keys topic alone, projected in the main thread into a file of its own that request threads
 * read too. It is removed when it is no longer needed (the rebuilt model holds its keys); one that
 * a process left behind, stopped or killed while it was needed, is resumed by the next start, so
 * that a revocation it applied is never forgotten. It runs while the served model is
 * of an older projection version (nobody projects into it while its successor is built), so that
 * an issue or a revocation counts within a second however busy the rebuild's thread is: the keys
 * topic is small, and its batches cost the event loop next to nothing.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { roleOfTopic } from '../config.js';
import { type Consumption, type KafkaPort, offsetKey } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import {
  openReadModel,
  ProjectionVersionMismatch,
  removeModelFile,
  type ReadModelDatabase,
} from '../read-model/database.js';
import { ReadModelReader } from '../read-model/reader.js';
import { ReadModelWriter } from '../read-model/writer.js';
import type { TopicRole } from '../../schemas/events.js';
import { decodeBatch } from './decode.js';

export interface KeysWatch {
  /** its model file, which request threads open read-only */
  file: string;
  positions(): ReadonlyMap<string, number>;
  orgOfKeyHash(keySha256: string): number | null;
  /** Stops it; `keepFile` (the service stops while the watch is needed): for the next start to resume. */
  stop(options?: { keepFile?: boolean }): Promise<void>;
}

/** The file of a watch started at `startedAtMs`: one of its own, as one ending may still be removing its file. */
export function keysWatchFile(dataDir: string, startedAtMs: number): string {
  return join(dataDir, `keys-watch-${startedAtMs}.sqlite`);
}

/**
 * The file of the watch an earlier process left while it was needed (stopped or killed): the
 * newest, to be resumed; older ones are removed. Null when there is none.
 */
export function leftKeysWatchFile(dataDir: string): string | null {
  const left = readdirSync(dataDir)
    .map((name) => /^keys-watch-(\d+)\.sqlite$/.exec(name))
    .filter((match) => match !== null)
    .sort((a, b) => Number(b[1]) - Number(a[1]))
    .map((match) => join(dataDir, match[0]));
  for (const older of left.slice(1)) removeModelFile(older);
  return left[0] ?? null;
}

/** Delays before consuming again after a failure: doubling from 1 s, at most 10 s. */
const retry = { initialMs: 1000, maxMs: 10_000 };

/**
 * Opens the watch's file and starts its consumer. The file holds what the watch applied and its
 * positions: one of this projection version already there (left by a process stopped or killed
 * while it was needed) is resumed,
 * and its keys count at once, before its consumer has joined, so that a revocation it applied is
 * not forgotten across a restart, even with the broker away; anything else there is replaced. Its
 * consumer's failures, the first start's included, are retried with backoff from its own
 * positions: the keys it has answered from are never forgotten (a watch started anew would read
 * the topic from its start, and answer from older models meanwhile). Throws only if the file
 * cannot be opened.
 */
export function startKeysWatch(options: {
  port: Pick<KafkaPort, 'consume'>;
  topics: Record<TopicRole, string>;
  groupId: string;
  logger: Logger;
  /** where the watch keeps its model: resumed if it holds this projection version, else replaced */
  file: string;
  /** a batch is committed: the keys it holds may have changed */
  moved?: () => void;
}): KeysWatch {
  const db = openResumed(options.file, options.logger);
  const writer = new ReadModelWriter(db, roleOfTopic(options.topics));
  const reader = new ReadModelReader(db);
  const positions = new Map(
    writer
      .storedOffsets()
      .filter((stored) => stored.topic === options.topics.apiKeys)
      .map((stored) => [offsetKey(stored.topic, stored.partition), stored.nextOffset]),
  );
  const consume = (): Promise<Consumption> =>
    options.port.consume({
      groupId: options.groupId,
      topics: [options.topics.apiKeys],
      startAt: (topic, partition) => writer.storedOffset(topic, partition),
      onBatch: (batch) => {
        // a consumer that joined as the watch stopped: its file is closed
        if (stopped) return;
        const outcome = writer.applyBatch(
          batch.topic,
          batch.partition,
          decodeBatch('apiKeys', batch.messages),
          batch.next,
        );
        if (outcome.nextOffset !== null)
          positions.set(offsetKey(batch.topic, batch.partition), outcome.nextOffset);
        options.moved?.();
      },
    });
  let consumption: Consumption | null = null;
  let stopped = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | null = null;
  const resumeAfter = (error: Error): void => {
    const delay = Math.min(retry.maxMs, retry.initialMs * 2 ** Math.min(failures, 10));
    failures += 1;
    options.logger.warn(
      { err: error, retryInMs: delay },
      'the keys watch failed; it resumes from its own positions',
    );
    retryTimer = setTimeout(() => {
      retryTimer = null;
      startConsuming();
    }, delay);
    retryTimer.unref();
  };
  const startConsuming = (): void => {
    if (stopped) return;
    consume().then(
      (next) => {
        if (stopped) {
          next.stop().catch(() => undefined);
          return;
        }
        failures = 0;
        supervise(next);
      },
      (startError: unknown) => {
        if (!stopped) resumeAfter(startError instanceof Error ? startError : new Error(String(startError)));
      },
    );
  };
  const supervise = (running: Consumption): void => {
    consumption = running;
    void running.failed.then((error) => {
      if (stopped || consumption !== running) return;
      consumption = null;
      resumeAfter(error);
    });
  };
  startConsuming();
  options.logger.info(
    { groupId: options.groupId, file: options.file, resumed: positions.size > 0 },
    'watching the keys topic while the served model is rebuilt',
  );
  return {
    file: options.file,
    positions: () => positions,
    orgOfKeyHash: (hash) => reader.orgOfKeyHash(hash),
    stop: async ({ keepFile = false } = {}) => {
      stopped = true;
      if (retryTimer !== null) clearTimeout(retryTimer);
      const running = consumption;
      consumption = null;
      try {
        await running?.stop();
      } finally {
        db.close();
        if (!keepFile) removeModelFile(options.file);
      }
    },
  };
}

/** The watch's file: resumed when it holds this projection version, else created anew. */
function openResumed(file: string, logger: Logger): ReadModelDatabase {
  let db: ReadModelDatabase;
  try {
    db = openReadModel(file);
  } catch (error) {
    if (!(error instanceof ProjectionVersionMismatch)) throw error;
    logger.warn({ file }, 'a keys watch file of another projection version is replaced');
    removeModelFile(file);
    db = openReadModel(file);
  }
  // What it answered from must outlive a crash of the machine too: the topic is small, so are its commits.
  db.pragma('synchronous = FULL');
  return db;
}

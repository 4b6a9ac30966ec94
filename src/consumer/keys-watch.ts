/**
 * The keys topic alone, projected in the main thread into a file of its own that request threads
 * read too (created anew at each start, removed at the stop). It runs while the served model is
 * of an older projection version (nobody projects into it while its successor is built), so that
 * an issue or a revocation counts within a second however busy the rebuild's thread is: the keys
 * topic is small, and its batches cost the event loop next to nothing.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { roleOfTopic } from '../config.js';
import { type Consumption, type KafkaPort, offsetKey } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import { openReadModel, removeModelFile } from '../read-model/database.js';
import { ReadModelReader } from '../read-model/reader.js';
import { ReadModelWriter } from '../read-model/writer.js';
import type { TopicRole } from '../../schemas/events.js';
import { decodeBatch } from './decode.js';

export interface KeysWatch {
  /** its model file, which request threads open read-only */
  file: string;
  positions(): ReadonlyMap<string, number>;
  orgOfKeyHash(keySha256: string): number | null;
  stop(): Promise<void>;
}

/** The file of a watch started at `startedAtMs`: one of its own, as one ending may still be removing its file. */
export function keysWatchFile(dataDir: string, startedAtMs: number): string {
  return join(dataDir, `keys-watch-${startedAtMs}.sqlite`);
}

/** Removes the files of watches an earlier process left (it ended without stopping them). */
export function removeKeysWatchFiles(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (/^keys-watch-\d+\.sqlite$/.test(name)) removeModelFile(join(dataDir, name));
  }
}

/** Delays before consuming again after a failure: doubling from 1 s, at most 10 s. */
const retry = { initialMs: 1000, maxMs: 10_000 };

/**
 * Starts watching; rejects if the first start fails. A failure later is retried with backoff on the
 * same in-memory model, from its own positions: the keys it has answered from are never forgotten
 * (a watch started anew would read the topic from its start, and answer from older models meanwhile).
 */
export async function startKeysWatch(options: {
  port: Pick<KafkaPort, 'consume'>;
  topics: Record<TopicRole, string>;
  groupId: string;
  logger: Logger;
  /** where the watch keeps its model; whatever is there is replaced */
  file: string;
  /** a batch is committed: the keys it holds may have changed */
  moved?: () => void;
}): Promise<KeysWatch> {
  removeModelFile(options.file);
  const db = openReadModel(options.file);
  const writer = new ReadModelWriter(db, roleOfTopic(options.topics));
  const reader = new ReadModelReader(db);
  const positions = new Map<string, number>();
  const consume = (): Promise<Consumption> =>
    options.port.consume({
      groupId: options.groupId,
      topics: [options.topics.apiKeys],
      startAt: (topic, partition) => writer.storedOffset(topic, partition),
      onBatch: (batch) => {
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
  let consumption: Consumption | null;
  try {
    consumption = await consume();
  } catch (error) {
    db.close();
    removeModelFile(options.file);
    throw error;
  }
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
    }, delay);
    retryTimer.unref();
  };
  const supervise = (running: Consumption): void => {
    consumption = running;
    void running.failed.then((error) => {
      if (stopped || consumption !== running) return;
      consumption = null;
      resumeAfter(error);
    });
  };
  supervise(consumption);
  options.logger.info(
    { groupId: options.groupId },
    'watching the keys topic while the served model is rebuilt',
  );
  return {
    file: options.file,
    positions: () => positions,
    orgOfKeyHash: (hash) => reader.orgOfKeyHash(hash),
    stop: async () => {
      stopped = true;
      if (retryTimer !== null) clearTimeout(retryTimer);
      const running = consumption;
      consumption = null;
      try {
        await running?.stop();
      } finally {
        db.close();
        removeModelFile(options.file);
      }
    },
  };
}

/**
 * How far a model file has got, read from the file itself, and how far the topics go (for code that
 * watches the service: tests, benchmarks); and a model file turned into one of an older release.
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { KafkaPort } from '../src/kafka/port.js';
import { keysFile } from '../src/keys/keys-store.js';
import { ModelFiles } from '../src/read-model/files.js';

/**
 * Messages the model file has durably applied: the sum of the offsets stored with it (one message
 * per offset, as the producers here write without transactions). 0 while the file or its tables
 * do not exist yet.
 */
export function appliedMessagesIn(file: string): number {
  if (!existsSync(file)) return 0;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (
        db.prepare('SELECT coalesce(sum(next_offset), 0) AS n FROM consumer_offsets').get() as { n: number }
      ).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

/**
 * The same for a data directory: its live orders model and its keys store, which together read
 * every topic once.
 */
export function appliedMessages(dataDir: string): number {
  const file = new ModelFiles(dataDir).currentFile();
  return (file === null ? 0 : appliedMessagesIn(file)) + appliedMessagesIn(keysFile(dataDir));
}

/**
 * Sum of the topics' end offsets: what `appliedMessages` reaches once the model has caught up. It
 * counts every message the topics hold, messages a producer wrote twice on a retry included.
 */
export async function topicEndOffsets(
  kafka: Pick<KafkaPort, 'endOffsets'>,
  topics: readonly string[],
): Promise<number> {
  return (await kafka.endOffsets(topics)).reduce((sum, p) => sum + p.end, 0);
}

/** Marks a (closed) model file as built by projection version 1, as a file of an older release is. */
export function markProjectionVersion1(file: string): void {
  const db = new Database(file, { fileMustExist: true });
  try {
    db.prepare(`UPDATE projection_meta SET value = '1' WHERE key = 'projection_version'`).run();
  } finally {
    db.close();
  }
}

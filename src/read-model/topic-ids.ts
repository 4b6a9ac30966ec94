/**
 * The id (Kafka's topic UUID) of each topic a model was built from, kept in the file's
 * `projection_meta` as `topic_id:<topic>` rows: a topic deleted and created again under the same name
 * has another id, and its offsets say nothing of the model's positions (`kafka/history.ts`).
 */
import type { ReadModelDatabase } from './database.js';

const prefix = 'topic_id:';

export class ModelTopicIds {
  constructor(private readonly db: ReadModelDatabase) {}

  /** The ids recorded so far, by topic name. */
  recorded(): Map<string, string> {
    const rows = this.db
      .prepare('SELECT key, value FROM projection_meta WHERE substr(key, 1, ?) = ?')
      .all(prefix.length, prefix) as { key: string; value: string }[];
    return new Map(rows.map((row) => [row.key.slice(prefix.length), row.value]));
  }

  /** Records the ids of topics that have none recorded yet; a recorded id is never replaced. */
  record(ids: ReadonlyMap<string, string>): void {
    const insert = this.db.prepare('INSERT OR IGNORE INTO projection_meta (key, value) VALUES (?, ?)');
    this.db.transaction(() => {
      for (const [topic, id] of ids) insert.run(`${prefix}${topic}`, id);
    })();
  }
}

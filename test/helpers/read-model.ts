import type { CommitCounter } from '../../src/read-model/commit-counter.js';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { ordersModelSchema } from '../../projections/orders/schema.js';
import { keysFile } from '../../src/keys/keys-store.js';
import { ModelFiles } from '../../src/read-model/files.js';
import {
  articleListOrderHash,
  digestValue,
  isZero,
  listedOrderHash,
  publishedArticleHash,
  xorInto,
  zeroDigest,
  type Digest,
} from '../../projections/orders/digests.js';
import { DAY_MS } from '../../projections/orders/listing.js';
import type { ArticleRow, OrderRow } from '../../projections/orders/rows.js';
import { perStream, streams, type TopicRole } from '../../schemas/streams.js';
import type { DomainEvent } from '../../schemas/events.js';
import { openOneFileModel, openReadModel, type ReadModelDatabase } from '../../src/read-model/database.js';
import { ReadModelWriter } from '../../src/read-model/writer.js';
import { roleOfTopic } from '../../src/config.js';
import { decodeBatch } from '../../src/projector/decode.js';
import { roleOf } from './events.js';

export const testTopics: Record<TopicRole, string> = perStream((role) =>
  streams[role].defaultTopic.replace(/^pr\./, ''),
);

/** An in-memory read model holding the keys too (or the given file), with a writer, fed events directly (no Kafka). */
export function memoryReadModel(
  db: ReadModelDatabase = openOneFileModel(':memory:'),
  /** moved around each commit, as the keys store's writer does (`commit-counter.ts`) */
  commits?: CommitCounter,
): {
  db: ReadModelDatabase;
  writer: ReadModelWriter;
  apply: (...events: (DomainEvent | { role: TopicRole; raw: string | Buffer })[]) => void;
  /** Applies the events in batches of up to `size` messages per topic, in the order given. */
  applyInBatches: (size: number, events: readonly DomainEvent[]) => void;
} {
  const writer = new ReadModelWriter(
    db,
    roleOfTopic(testTopics),
    () => new Date(Date.UTC(2026, 0, 1)),
    commits,
  );
  const nextOffset = new Map<string, number>();
  const apply = (...events: (DomainEvent | { role: TopicRole; raw: string | Buffer })[]): void => {
    for (const event of events) {
      const role = 'role' in event ? event.role : roleOf(event);
      const topic = testTopics[role];
      const offset = nextOffset.get(topic) ?? 0;
      nextOffset.set(topic, offset + 1);
      const value =
        'role' in event
          ? Buffer.isBuffer(event.raw)
            ? event.raw
            : Buffer.from(event.raw)
          : Buffer.from(JSON.stringify(event));
      writer.applyBatch(topic, 0, decodeBatch(role, [{ offset: String(offset), key: null, value }]));
    }
  };
  const applyInBatches = (size: number, events: readonly DomainEvent[]): void => {
    for (let at = 0; at < events.length; at += size) {
      const byRole = new Map<TopicRole, DomainEvent[]>();
      for (const event of events.slice(at, at + size)) {
        byRole.set(roleOf(event), [...(byRole.get(roleOf(event)) ?? []), event]);
      }
      for (const [role, batch] of byRole) {
        const topic = testTopics[role];
        const first = nextOffset.get(topic) ?? 0;
        nextOffset.set(topic, first + batch.length);
        const messages = batch.map((event, i) => ({
          offset: String(first + i),
          key: null,
          value: Buffer.from(JSON.stringify(event)),
        }));
        writer.applyBatch(topic, 0, decodeBatch(role, messages));
      }
    }
  };
  return { db, writer, apply, applyInBatches };
}

/**
 * The tables that record how a file was fed, not what it projects: what two files holding the same
 * projection may differ in (offsets, dead letters and their times, versions, operators' records).
 */
const bookkeepingTables = new Set([
  'consumer_offsets',
  'dead_letters',
  'projection_meta',
  'operator_skips',
  'accepted_history_losses',
]);

/**
 * Every table the model projects, each ordered by its primary key, for equality checks: found in
 * the file, so that a table a new stream adds is in the dump with no edit here. The keys are in it
 * where the file holds them (a one-file model of tests and tools).
 */
export function dumpModel(db: ReadModelDatabase): Record<string, unknown[]> {
  return tableRows(db, (table) => !table.startsWith('sqlite') && !bookkeepingTables.has(table));
}

/** Every row of each table of the file that `included` takes, ordered by its primary key. */
function tableRows(db: ReadModelDatabase, included: (table: string) => boolean): Record<string, unknown[]> {
  const tables = db
    .prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
    .pluck()
    .all() as string[];
  return Object.fromEntries(
    tables
      .filter(included)
      .map((table) => [
        table,
        db.prepare(`SELECT * FROM "${table}" ORDER BY ${primaryKeyOf(db, table)}`).all(),
      ]),
  );
}

/** A table's primary key columns in their order, or its rowid. */
function primaryKeyOf(db: ReadModelDatabase, table: string): string {
  const columns = (db.pragma(`table_info("${table}")`) as { name: string; pk: number }[])
    .filter((column) => column.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((column) => `"${column.name}"`);
  return columns.length === 0 ? 'rowid' : columns.join(', ');
}

/** A dump's orders model alone: an orders model holds no keys, a one-file model of tests holds both. */
export function ordersOnly(dump: Record<string, unknown[]>): Record<string, unknown[]> {
  return Object.fromEntries(Object.entries(dump).filter(([table]) => table !== 'api_keys'));
}

const dumpKeys = (db: ReadModelDatabase): unknown[] =>
  db.prepare('SELECT * FROM api_keys ORDER BY key_id').all();

/**
 * A data directory's state as one model: the tables of its served orders model, with the keys of
 * its keys store (the service keeps them apart; a replay of every topic into one model holds both).
 */
export function dumpDataDir(dataDir: string): Record<string, unknown[]> {
  const orders = openReadModel(new ModelFiles(dataDir).currentFile()!, { readonly: true });
  const keys = openReadModel(keysFile(dataDir), { readonly: true, store: keysStoreSchema });
  try {
    return { ...dumpModel(orders), api_keys: dumpKeys(keys) };
  } finally {
    orders.close();
    keys.close();
  }
}

/** The dead letters of a data directory: its served orders model's and its keys store's. */
export function deadLettersIn(
  dataDir: string,
): { topic: string; partition: number; offset: number; reason: string }[] {
  const stores = [
    { file: new ModelFiles(dataDir).currentFile()!, store: ordersModelSchema },
    { file: keysFile(dataDir), store: keysStoreSchema },
  ];
  return stores.flatMap(({ file, store }) => {
    const db = openReadModel(file, { readonly: true, store });
    try {
      return db.prepare('SELECT topic, partition, "offset", reason FROM dead_letters').all() as {
        topic: string;
        partition: number;
        offset: number;
        reason: string;
      }[];
    } finally {
      db.close();
    }
  });
}

/**
 * The digests kept by the projection: every `…_digests` table of the file, ordered by its key. Found
 * in the file, so that a digest table `recomputedDigests` does not recompute fails the comparison.
 */
export function storedDigests(db: ReadModelDatabase): Record<string, unknown[]> {
  return tableRows(db, (table) => table.endsWith('_digests'));
}

/** The digests recomputed from every row: what `storedDigests` must always equal. */
export function recomputedDigests(db: ReadModelDatabase): Record<string, unknown[]> {
  const orgs = new Map<number, Digest>();
  const orders = new Map<number, Digest>();
  const xor = (into: Map<number, Digest>, id: number, hash: Digest): void => {
    const digest = into.get(id) ?? zeroDigest();
    xorInto(digest, hash);
    into.set(id, digest);
  };
  for (const row of db.prepare('SELECT * FROM orders').all() as OrderRow[]) {
    const listed = listedOrderHash(row);
    if (listed !== null) xor(orgs, listed.orgId, listed.hash);
    const shown = articleListOrderHash(row);
    if (shown !== null) xor(orders, row.order_id, shown);
  }
  for (const row of db.prepare('SELECT * FROM articles').all() as ArticleRow[]) {
    const published = publishedArticleHash(row);
    if (published !== null) xor(orders, published.orderId, published.hash);
  }
  const rows = (digests: Map<number, Digest>, key: string): unknown[] =>
    [...digests]
      .filter(([, digest]) => !isZero(digest))
      .sort(([a], [b]) => a - b)
      .map(([id, digest]) => ({ [key]: id, digest: digestValue(digest) }));
  return { org_digests: rows(orgs, 'org_id'), order_digests: rows(orders, 'order_id') };
}

/** The counters kept by the projection (org_order_counts, org_order_days), ordered. */
export function storedCounters(db: ReadModelDatabase): Record<string, unknown[]> {
  return {
    org_order_counts: db.prepare('SELECT * FROM org_order_counts ORDER BY org_id, listed_status').all(),
    org_order_days: db.prepare('SELECT * FROM org_order_days ORDER BY org_id, day, listed_status').all(),
  };
}

/** The counters recomputed with COUNT(*) over the orders: what `storedCounters` must always equal. */
export function recountedCounters(db: ReadModelDatabase): Record<string, unknown[]> {
  return {
    org_order_counts: db
      .prepare(
        `SELECT org_id, listed_status, count(*) AS orders FROM orders WHERE listed_status IS NOT NULL
         GROUP BY org_id, listed_status ORDER BY org_id, listed_status`,
      )
      .all(),
    org_order_days: db
      .prepare(
        `SELECT org_id, (created_at_ms - ((created_at_ms % ${DAY_MS}) + ${DAY_MS}) % ${DAY_MS}) / ${DAY_MS} AS day, listed_status, count(*) AS orders FROM orders
         WHERE listed_status IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
      )
      .all(),
  };
}

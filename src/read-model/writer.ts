/**
 * The read model's only writer. One call applies one Kafka batch (one
 * partition) and the partition's new offset in ONE synchronous transaction:
 * after any crash the model equals a replay of the log up to the stored offset.
 */
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import { evolve, type CurrentRows, type ReadModelChange } from '../../projections/orders/evolve.js';
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
import { counterChanges, counterKeys, type OrderListing } from '../../projections/orders/listing.js';
import {
  apiKeyColumns,
  articleColumns,
  orderColumns,
  rowNamedBy,
  type ApiKeyRow,
  type ArticleRow,
  type OrderRow,
} from '../../projections/orders/rows.js';
import { manyRowsSql, maxRowsPerStatement, updateOrderSql, writeSql } from '../../projections/orders/sql.js';
import type { DomainEvent, EventType, TopicRole } from '../../schemas/events.js';
import type { DeadLetterReason, DecodedMessage } from './decoded.js';
import { offsetKey, splitOffsetKey, type RawMessage } from '../kafka/port.js';
import type { ReadModelDatabase } from './database.js';
import { skipDetail, type OperatorSkip } from './operator-skips.js';
import { counted, type CommitCounter } from './commit-counter.js';

export type { RawMessage };

export interface BatchOutcome {
  /** events decoded and projected (including those that changed nothing) */
  applied: number;
  /** applied events that changed no row: duplicates and stale facts */
  unchanged: number;
  deadLettered: number;
  /** messages below the stored offset, already applied before */
  skipped: number;
  appliedByType: Partial<Record<EventType, number>>;
  deadLettersByReason: Partial<Record<DeadLetterReason, number>>;
  /** the partition's next offset after this batch, or null if the batch was empty */
  nextOffset: number | null;
  /** time spent in the transaction */
  durationMs: number;
}

const maxDetailLength = 500;
/** A dead letter keeps this much of the value (and key); its size and SHA-256 name the whole. */
export const deadLetterPreviewBytes = 1024;

/** The size and SHA-256 of a dead-lettered value, and how much of it is stored. */
function valueFacts(value: Buffer | null): string {
  if (value === null) return '';
  const sha = createHash('sha256').update(value).digest('hex');
  const kept = Math.min(value.length, deadLetterPreviewBytes);
  return ` [value: ${value.length} bytes, sha256 ${sha}${kept < value.length ? `, the first ${kept} stored` : ''}]`;
}

export class ReadModelWriter {
  private readonly statements: { [K in keyof typeof writeSql]: Statement };
  private readonly offsets = new Map<string, number>();
  /** The rows the batch being applied has read or changed; written once each before its commit. */
  private readonly batch: BatchRows;
  /** UPDATE statements by the set of columns they write */
  private readonly orderUpdates = new Map<string, Statement>();
  /** The counters a listed order counts in, each with its net changes in the batch being applied. */
  private readonly counters: ListingCounter[];
  /** Rows written many to a statement (see `manyRowsSql`). */
  private readonly many: { [K in keyof typeof manyRowsSql]: ManyRows };

  constructor(
    private readonly db: ReadModelDatabase,
    private readonly roleOfTopic: (topic: string) => TopicRole | undefined,
    private readonly now: () => Date = () => new Date(),
    /** moved around every commit, for caches of this file in other threads (`commit-counter.ts`) */
    private readonly commits?: CommitCounter,
  ) {
    this.statements = Object.fromEntries(
      Object.entries(writeSql).map(([name, sql]) => [name, db.prepare(sql)]),
    ) as { [K in keyof typeof writeSql]: Statement };
    this.many = Object.fromEntries(
      Object.entries(manyRowsSql).map(([name, sqlFor]) => [name, new ManyRows(db, sqlFor)]),
    ) as { [K in keyof typeof manyRowsSql]: ManyRows };
    for (const row of this.statements.selectOffsets.all() as {
      topic: string;
      partition: number;
      next_offset: number;
    }[]) {
      this.offsets.set(offsetKey(row.topic, row.partition), row.next_offset);
    }
    const s = this.statements;
    this.counters = [
      {
        of: counterKeys.orgOrderCounts,
        increase: s.increaseOrderCount,
        decrease: s.decreaseOrderCount,
        dropEmpty: s.dropEmptyOrderCount,
        deltas: new Map(),
      },
      {
        of: counterKeys.orgOrderDays,
        increase: s.increaseOrderDay,
        decrease: s.decreaseOrderDay,
        dropEmpty: s.dropEmptyOrderDay,
        deltas: new Map(),
      },
    ];
    this.batch = new BatchRows({
      orders: (ids) => this.statements.selectOrders.all(JSON.stringify(ids)) as OrderRow[],
      articles: (ids) => this.statements.selectArticles.all(JSON.stringify(ids)) as ArticleRow[],
      apiKeys: (ids) => this.statements.selectApiKeys.all(JSON.stringify(ids)) as ApiKeyRow[],
    });
  }

  /** The next offset to read for a partition, as stored with the model; undefined when never read. */
  storedOffset(topic: string, partition: number): number | undefined {
    return this.offsets.get(offsetKey(topic, partition));
  }

  /**
   * Moves a partition past the record batch an operator skipped (`skip-batch`), when the model is
   * at that batch: in one transaction, a `skipped_by_operator` dead letter at the batch's first
   * offset saying what, who and why, and the position after the batch. A model that is anywhere
   * else on the partition is not moved and nothing is written. Returns the position after the
   * batch, or null when the model is not at it. A partition never read starts at the log's start,
   * which is where its projector met the batch.
   */
  skipByOperator(skip: OperatorSkip): number | null {
    const stored = this.storedOffset(skip.topic, skip.partition);
    if (stored !== undefined && stored !== skip.firstOffset) return null;
    const next = skip.lastOffset + 1;
    counted(
      this.commits,
      this.db.transaction(() => {
        this.statements.insertDeadLetter.run({
          topic: skip.topic,
          partition: skip.partition,
          offset: skip.firstOffset,
          key: null,
          value: null,
          reason: 'skipped_by_operator' satisfies DeadLetterReason,
          detail: skipDetail(skip).slice(0, maxDetailLength),
          recordedAt: this.now().toISOString(),
        });
        this.statements.upsertOffset.run(skip.topic, skip.partition, next);
      }),
    );
    this.offsets.set(offsetKey(skip.topic, skip.partition), next);
    return next;
  }

  storedOffsets(): { topic: string; partition: number; nextOffset: number }[] {
    return [...this.offsets].map(([key, nextOffset]) => {
      const [topic, partition] = splitOffsetKey(key);
      return { topic, partition, nextOffset };
    });
  }

  /**
   * Applies one partition's batch and stores the position after it. `positionAfter` is the
   * client's fetch position, which may lie beyond the last message (transaction markers, compacted
   * gaps); without it the position is the last message's offset + 1.
   */
  applyBatch(
    topic: string,
    partition: number,
    messages: readonly DecodedMessage[],
    positionAfter?: number,
  ): BatchOutcome {
    if (this.roleOfTopic(topic) === undefined) {
      throw new Error(`topic ${topic} is not one of the configured topics`);
    }
    const outcome: BatchOutcome = {
      applied: 0,
      unchanged: 0,
      deadLettered: 0,
      skipped: 0,
      appliedByType: {},
      deadLettersByReason: {},
      nextOffset: null,
      durationMs: 0,
    };
    const started = performance.now();
    const stored = this.storedOffset(topic, partition) ?? 0;
    const recordedAt = this.now().toISOString();
    let next = stored;
    const applyAll = this.db.transaction(() => {
      this.batch.read(messages.flatMap((m) => (m.decoded.ok ? [m.decoded.event] : [])));
      for (const message of messages) {
        const offset = Number(message.offset);
        if (offset < stored) {
          outcome.skipped += 1;
          continue;
        }
        const { decoded } = message;
        if (decoded.ok) {
          const change = evolve(decoded.event, this.batch);
          if (change === null) outcome.unchanged += 1;
          else this.batch.change(change);
          outcome.applied += 1;
          outcome.appliedByType[decoded.event.type] = (outcome.appliedByType[decoded.event.type] ?? 0) + 1;
        } else {
          this.statements.insertDeadLetter.run({
            topic,
            partition,
            offset,
            key: message.key?.subarray(0, deadLetterPreviewBytes) ?? null,
            value: message.value?.subarray(0, deadLetterPreviewBytes) ?? null,
            reason: decoded.reason,
            detail: `${decoded.detail.slice(0, maxDetailLength)}${valueFacts(message.value)}`,
            recordedAt,
          });
          outcome.deadLettered += 1;
          outcome.deadLettersByReason[decoded.reason] =
            (outcome.deadLettersByReason[decoded.reason] ?? 0) + 1;
        }
        next = offset + 1;
      }
      if (positionAfter !== undefined && positionAfter > next) next = positionAfter;
      this.writeChanges();
      this.flushCounts();
      if (next !== stored) this.statements.upsertOffset.run(topic, partition, next);
    });
    try {
      counted(this.commits, applyAll);
    } finally {
      this.batch.clear();
      for (const counter of this.counters) counter.deltas.clear();
      for (const rows of Object.values(this.many)) rows.clear();
    }
    if (next !== stored) {
      this.offsets.set(offsetKey(topic, partition), next);
      outcome.nextOffset = next;
    }
    outcome.durationMs = performance.now() - started;
    return outcome;
  }

  /**
   * Writes each row the batch changed once, from the row before the batch to the row after it, with
   * the counters this moves (listing counters by their net change) and the digests of what the
   * answers show: each moved by the XOR of the shown row before and after.
   */
  private writeChanges(): void {
    const orgDigests = new DigestChanges();
    const orderDigests = new DigestChanges();
    for (const { before, row } of this.batch.changed(this.batch.orders)) {
      if (before === undefined) {
        this.many.insertOrders.add(orderColumns.map((column) => row[column]));
      } else {
        const changed = orderColumns.filter((column) => before[column] !== row[column]);
        if (changed.length === 0) continue;
        this.updateOrderStatement(changed).run([...changed.map((column) => row[column]), row.order_id]);
      }
      this.countListingChanges(before, row);
      for (const shown of [listedOrderHash(before), listedOrderHash(row)]) {
        if (shown !== null) orgDigests.xor(shown.orgId, shown.hash);
      }
      for (const shown of [articleListOrderHash(before), articleListOrderHash(row)]) {
        if (shown !== null) orderDigests.xor(row.order_id, shown);
      }
    }
    for (const { before, row } of this.batch.changed(this.batch.articles)) {
      this.many.upsertArticles.add(articleColumns.map((column) => row[column]));
      // An article published again under another order leaves the order it belonged to.
      for (const shown of [publishedArticleHash(before), publishedArticleHash(row)]) {
        if (shown !== null) orderDigests.xor(shown.orderId, shown.hash);
      }
    }
    for (const { row } of this.batch.changed(this.batch.apiKeys)) {
      this.statements.upsertApiKey.run(apiKeyColumns.map((column) => row[column]));
    }
    const orgIds = orgDigests.writeTo(this.many.xorOrgDigests);
    const orderIds = orderDigests.writeTo(this.many.xorOrderDigests);
    for (const rows of Object.values(this.many)) rows.flush();
    if (orgIds.length > 0) this.statements.dropZeroOrgDigests.run(JSON.stringify(orgIds));
    if (orderIds.length > 0) this.statements.dropZeroOrderDigests.run(JSON.stringify(orderIds));
  }

  private updateOrderStatement(columns: (typeof orderColumns)[number][]): Statement {
    const key = columns.join(',');
    let statement = this.orderUpdates.get(key);
    if (statement === undefined) {
      statement = this.db.prepare(updateOrderSql(columns));
      this.orderUpdates.set(key, statement);
    }
    return statement;
  }

  /** Collects the batch's net change per counter; `flushCounts` writes them before the commit. */
  private countListingChanges(before: OrderRow | undefined, after: OrderRow): void {
    for (const { listing, delta } of counterChanges(before, after)) {
      for (const counter of this.counters) {
        const names = counter.of(listing);
        const key = names.join('|');
        const entry = counter.deltas.get(key);
        if (entry === undefined) counter.deltas.set(key, { names, delta });
        else entry.delta += delta;
      }
    }
  }

  private flushCounts(): void {
    for (const { deltas, increase, decrease, dropEmpty } of this.counters) {
      for (const { names, delta } of deltas.values()) {
        if (delta > 0) increase.run(...names, delta);
        if (delta < 0) {
          decrease.run(-delta, ...names);
          dropEmpty.run(...names);
        }
      }
    }
  }
}

/** A batch's net change to the digests of one table, by id (XOR: the order of the changes is irrelevant). */
class DigestChanges {
  private readonly changes = new Map<number, Digest>();

  xor(id: number, hash: Digest): void {
    let digest = this.changes.get(id);
    if (digest === undefined) {
      digest = zeroDigest();
      this.changes.set(id, digest);
    }
    xorInto(digest, hash);
  }

  /** Adds the changes that move a digest to `rows`; returns their ids. */
  writeTo(rows: ManyRows): number[] {
    const ids: number[] = [];
    for (const [id, digest] of this.changes) {
      if (isZero(digest)) continue;
      rows.add([id, digestValue(digest)]);
      ids.push(id);
    }
    return ids;
  }
}

/**
 * Rows bound for one multi-row statement: `add` collects a row's values, and every
 * `maxRowsPerStatement` rows, and at `flush`, one statement writes them. A statement is prepared
 * once for each row count met.
 */
class ManyRows {
  private readonly statements = new Map<number, Statement>();
  private values: unknown[] = [];
  private rows = 0;

  constructor(
    private readonly db: ReadModelDatabase,
    private readonly sqlFor: (rows: number) => string,
  ) {}

  add(row: readonly unknown[]): void {
    for (const value of row) this.values.push(value);
    this.rows += 1;
    if (this.rows === maxRowsPerStatement) this.flush();
  }

  /** Writes the rows collected so far. */
  flush(): void {
    if (this.rows === 0) return;
    let statement = this.statements.get(this.rows);
    if (statement === undefined) {
      statement = this.db.prepare(this.sqlFor(this.rows));
      this.statements.set(this.rows, statement);
    }
    const values = this.values;
    this.values = [];
    this.rows = 0;
    statement.run(values);
  }

  /** Forgets rows collected but not written (a batch that failed before its commit). */
  clear(): void {
    this.values = [];
    this.rows = 0;
  }
}

/**
 * A per-organization counter table of listed orders. `of` names a listing's counter in the order
 * of the table's key columns, as its statements take them; `deltas` holds the batch's net change
 * per counter, keyed by those names.
 */
interface ListingCounter {
  of: (listing: OrderListing) => (number | string)[];
  increase: Statement;
  decrease: Statement;
  dropEmpty: Statement;
  deltas: Map<string, { names: (number | string)[]; delta: number }>;
}

/** A row as it was before the batch (undefined: absent) and as the batch has left it so far. */
interface BatchRow<R> {
  before: R | undefined;
  row: R | undefined;
}

/**
 * The current rows of one batch: every row its events name is read with one statement per table
 * before the first event, and each event then sees the rows the events before it left.
 */
class BatchRows implements CurrentRows {
  readonly orders = new Map<number, BatchRow<OrderRow>>();
  readonly articles = new Map<number, BatchRow<ArticleRow>>();
  readonly apiKeys = new Map<string, BatchRow<ApiKeyRow>>();

  constructor(
    private readonly select: {
      orders: (ids: number[]) => OrderRow[];
      articles: (ids: number[]) => ArticleRow[];
      apiKeys: (ids: string[]) => ApiKeyRow[];
    },
  ) {}

  /** Reads the stored rows of every entity the events name. */
  read(events: readonly DomainEvent[]): void {
    const orderIds = new Set<number>();
    const articleIds = new Set<number>();
    const keyIds = new Set<string>();
    for (const event of events) {
      const named = rowNamedBy(event);
      if (named.table === 'orders') orderIds.add(named.id);
      else if (named.table === 'articles') articleIds.add(named.id);
      else keyIds.add(named.id);
    }
    load(this.orders, orderIds, this.select.orders, (row) => row.order_id);
    load(this.articles, articleIds, this.select.articles, (row) => row.article_id);
    load(this.apiKeys, keyIds, this.select.apiKeys, (row) => row.key_id);
  }

  order(orderId: number): OrderRow | undefined {
    return this.orders.get(orderId)?.row;
  }

  article(articleId: number): ArticleRow | undefined {
    return this.articles.get(articleId)?.row;
  }

  apiKey(keyId: string): ApiKeyRow | undefined {
    return this.apiKeys.get(keyId)?.row;
  }

  change(change: ReadModelChange): void {
    switch (change.table) {
      case 'orders':
        entry(this.orders, change.row.order_id).row = change.row;
        return;
      case 'articles':
        entry(this.articles, change.row.article_id).row = change.row;
        return;
      case 'api_keys':
        entry(this.apiKeys, change.row.key_id).row = change.row;
        return;
    }
  }

  /** The rows of a table the batch has changed, each with the row before the batch. */
  *changed<K, R>(rows: Map<K, BatchRow<R>>): Generator<{ before: R | undefined; row: R }> {
    for (const { before, row } of rows.values()) {
      if (row !== undefined && row !== before) yield { before, row };
    }
  }

  clear(): void {
    this.orders.clear();
    this.articles.clear();
    this.apiKeys.clear();
  }
}

function load<K, R>(
  rows: Map<K, BatchRow<R>>,
  ids: Set<K>,
  select: (ids: K[]) => R[],
  idOf: (row: R) => K,
): void {
  if (ids.size === 0) return;
  for (const id of ids) rows.set(id, { before: undefined, row: undefined });
  for (const row of select([...ids])) rows.set(idOf(row), { before: row, row });
}

function entry<K, R>(rows: Map<K, BatchRow<R>>, id: K): BatchRow<R> {
  const found = rows.get(id);
  if (found !== undefined) return found;
  // evolve only changes rows it was given through `order`/`article`/`apiKey`, all read beforehand
  throw new Error(`a change to a row the batch did not read: ${String(id)}`);
}

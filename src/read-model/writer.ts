/**
 * The read model's only writer. One call applies one Kafka batch (one
 * partition) and the partition's new offset in ONE synchronous transaction:
 * after any crash the model equals a replay of the log up to the stored offset.
 */
import type { Statement } from 'better-sqlite3';
import { evolve } from '../../projections/orders/evolve.js';
import {
  articleListOrderHash,
  listedOrderHash,
  publishedArticleHash,
} from '../../projections/orders/digests.js';
import {
  articleColumns,
  orderColumns,
  type ArticleRow,
  type OrderRow,
} from '../../projections/orders/rows.js';
import { manyRowsSql, updateOrderSql, writeSql } from '../../projections/orders/sql.js';
import { apiKeyColumns, type ApiKeyRow } from '../../projections/keys/rows.js';
import { keysWriteSql } from '../../projections/keys/sql.js';
import type { EventType } from '../../schemas/events.js';
import type { TopicRole } from '../../schemas/streams.js';
import type { DeadLetterReason, DecodedMessage } from './decoded.js';
import { offsetKey, splitOffsetKey } from '../kafka/port.js';
import type { ReadModelDatabase } from './database.js';
import type { OperatorSkip } from './operator-skips.js';
import { counted, type CommitCounter } from './commit-counter.js';
import { operatorSkipDeadLetter, undecodedDeadLetter } from './dead-letters.js';
import { BatchRows } from './row-cache.js';
import { ManyRows } from './multi-row-insert.js';
import { DigestChanges } from './digest-changes.js';
import { ListingCounters } from './listing-counters.js';
import { ModelTopicIds } from './topic-ids.js';
import { lazyStatements } from './lazy-statements.js';

const statementsSql = { ...writeSql, ...keysWriteSql };
type OffsetRow = { topic: string; partition: number; next_offset: number };

export interface BatchOutcome {
  /** events decoded and projected (including those that changed nothing) */
  applied: number;
  /** applied events that changed no row: duplicates and stale facts */
  unchanged: number;
  deadLettered: number;
  /** messages below the stored offset, applied before */
  alreadyApplied: number;
  appliedByType: Partial<Record<EventType, number>>;
  deadLettersByReason: Partial<Record<DeadLetterReason, number>>;
  /** the partition's next offset after this batch, or null if the batch was empty */
  nextOffset: number | null;
  /** time spent in the transaction */
  durationMs: number;
}

export class ReadModelWriter {
  /** prepared at first use: an orders model's file has no api_keys, the keys store's no orders */
  private readonly statements: Readonly<Record<keyof typeof statementsSql, Statement>>;
  private readonly offsets = new Map<string, number>();
  /** The rows the batch being applied has read or changed; written once each before its commit. */
  private readonly batch: BatchRows;
  /** UPDATE statements by the set of columns they write */
  private readonly orderUpdates = new Map<string, Statement>();
  /** The counters a listed order counts in, each with its net changes in the batch being applied. */
  private readonly counters: ListingCounters;
  /** Rows written many to a statement (see `manyRowsSql`). */
  private readonly many: { [K in keyof typeof manyRowsSql]: ManyRows };
  /** the ids of the topics the model is built from (`topic-ids.ts`) */
  readonly topicIds: ModelTopicIds;

  constructor(
    private readonly db: ReadModelDatabase,
    private readonly roleOfTopic: (topic: string) => TopicRole | undefined,
    private readonly now: () => Date = () => new Date(),
    /** moved around every commit, for caches of this file in other threads (`commit-counter.ts`) */
    private readonly commits?: CommitCounter,
  ) {
    this.statements = lazyStatements(db, statementsSql);
    this.many = Object.fromEntries(
      Object.entries(manyRowsSql).map(([name, sqlFor]) => [name, new ManyRows(db, sqlFor)]),
    ) as { [K in keyof typeof manyRowsSql]: ManyRows };
    for (const row of this.statements.selectOffsets.all() as OffsetRow[]) {
      this.offsets.set(offsetKey(row.topic, row.partition), row.next_offset);
    }
    this.counters = new ListingCounters(this.statements);
    this.topicIds = new ModelTopicIds(db);
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
        this.statements.insertDeadLetter.run(operatorSkipDeadLetter(skip, this.now().toISOString()));
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
      alreadyApplied: 0,
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
          outcome.alreadyApplied += 1;
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
          this.statements.insertDeadLetter.run(
            undecodedDeadLetter(topic, partition, offset, message, decoded, recordedAt),
          );
          outcome.deadLettered += 1;
          outcome.deadLettersByReason[decoded.reason] =
            (outcome.deadLettersByReason[decoded.reason] ?? 0) + 1;
        }
        next = offset + 1;
      }
      if (positionAfter !== undefined && positionAfter > next) next = positionAfter;
      this.writeChanges();
      this.counters.flush();
      if (next !== stored) this.statements.upsertOffset.run(topic, partition, next);
    });
    try {
      counted(this.commits, applyAll);
    } finally {
      this.batch.clear();
      this.counters.clear();
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
      this.counters.count(before, row);
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
    const statement = this.orderUpdates.get(key) ?? this.db.prepare(updateOrderSql(columns));
    this.orderUpdates.set(key, statement);
    return statement;
  }
}

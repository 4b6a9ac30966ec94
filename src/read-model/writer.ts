/**
 * The read model's only writer. One call applies one Kafka batch (one
 * partition) and the partition's new offset in ONE synchronous transaction:
 * after any crash the model equals a replay of the log up to the stored offset.
 */
import type { Statement } from 'better-sqlite3';
import {
  evolve,
  listingOf,
  organizationsShowing,
  type CurrentRows,
  type OrderListing,
  type ReadModelChange,
} from '../../projections/orders/evolve.js';
import {
  orderColumns,
  type ApiKeyRow,
  type ArticleRow,
  type OrderRow,
} from '../../projections/orders/rows.js';
import { updateOrderSql, writeSql } from '../../projections/orders/sql.js';
import type { EventType, TopicRole } from '../../schemas/events.js';
import type { DeadLetterReason, DecodedMessage } from '../consumer/decode.js';
import type { RawMessage } from '../kafka/port.js';
import type { ReadModelDatabase } from './database.js';

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

export class ReadModelWriter {
  private readonly statements: { [K in keyof typeof writeSql]: Statement };
  private readonly offsets = new Map<string, number>();
  private readonly current: CurrentRows;
  /** UPDATE statements by the set of columns they write */
  private readonly orderUpdates = new Map<string, Statement>();
  /** The counters a listed order counts in, each with its net changes in the batch being applied. */
  private readonly counters: ListingCounter[];

  constructor(
    private readonly db: ReadModelDatabase,
    private readonly roleOfTopic: (topic: string) => TopicRole | undefined,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.statements = Object.fromEntries(
      Object.entries(writeSql).map(([name, sql]) => [name, db.prepare(sql)]),
    ) as { [K in keyof typeof writeSql]: Statement };
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
        of: (l) => [l.orgId, l.status],
        increase: s.increaseOrderCount,
        decrease: s.decreaseOrderCount,
        dropEmpty: s.dropEmptyOrderCount,
        deltas: new Map(),
      },
      {
        of: (l) => [l.orgId, l.day, l.status],
        increase: s.increaseOrderDay,
        decrease: s.decreaseOrderDay,
        dropEmpty: s.dropEmptyOrderDay,
        deltas: new Map(),
      },
    ];
    this.current = {
      order: (id) => this.statements.selectOrder.get(id) as OrderRow | undefined,
      article: (id) => this.statements.selectArticle.get(id) as ArticleRow | undefined,
      apiKey: (id) => this.statements.selectApiKey.get(id) as ApiKeyRow | undefined,
    };
  }

  /** The next offset to read for a partition, as stored with the model; undefined when never read. */
  storedOffset(topic: string, partition: number): number | undefined {
    return this.offsets.get(offsetKey(topic, partition));
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
      for (const message of messages) {
        const offset = Number(message.offset);
        if (offset < stored) {
          outcome.skipped += 1;
          continue;
        }
        const { decoded } = message;
        if (decoded.ok) {
          const change = evolve(decoded.event, this.current);
          if (change === null) outcome.unchanged += 1;
          else this.write(change);
          outcome.applied += 1;
          outcome.appliedByType[decoded.event.type] = (outcome.appliedByType[decoded.event.type] ?? 0) + 1;
        } else {
          this.statements.insertDeadLetter.run({
            topic,
            partition,
            offset,
            key: message.key,
            value: message.value,
            reason: decoded.reason,
            detail: decoded.detail.slice(0, maxDetailLength),
            recordedAt,
          });
          outcome.deadLettered += 1;
          outcome.deadLettersByReason[decoded.reason] =
            (outcome.deadLettersByReason[decoded.reason] ?? 0) + 1;
        }
        next = offset + 1;
      }
      if (positionAfter !== undefined && positionAfter > next) next = positionAfter;
      this.flushCounts();
      if (next !== stored) this.statements.upsertOffset.run(topic, partition, next);
    });
    try {
      applyAll();
    } finally {
      for (const counter of this.counters) counter.deltas.clear();
    }
    if (next !== stored) {
      this.offsets.set(offsetKey(topic, partition), next);
      outcome.nextOffset = next;
    }
    outcome.durationMs = performance.now() - started;
    return outcome;
  }

  private write(change: ReadModelChange): void {
    switch (change.table) {
      case 'orders': {
        const { before, row } = change;
        if (before === undefined) {
          this.statements.insertOrder.run(row);
        } else {
          const changed = orderColumns.filter((column) => before[column] !== row[column]);
          if (changed.length > 0) this.updateOrderStatement(changed).run(row);
        }
        this.countListingChange(listingOf(before), listingOf(row));
        for (const orgId of organizationsShowing(before, row)) this.statements.countOrgChange.run(orgId);
        this.statements.countOrderChange.run(row.order_id);
        return;
      }
      case 'articles':
        this.statements.upsertArticle.run(change.row);
        this.statements.countOrderChange.run(change.row.order_id);
        return;
      case 'api_keys':
        this.statements.upsertApiKey.run(change.row);
        return;
    }
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
  private countListingChange(before: OrderListing | null, after: OrderListing | null): void {
    if (before?.orgId === after?.orgId && before?.status === after?.status && before?.day === after?.day) {
      return;
    }
    for (const [listing, delta] of [
      [before, -1],
      [after, 1],
    ] as const) {
      if (listing === null) continue;
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

/** The key of a partition in offset maps. */
export function offsetKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}

function splitOffsetKey(key: string): [string, number] {
  const colon = key.indexOf(':');
  return [key.slice(colon + 1), Number(key.slice(0, colon))];
}

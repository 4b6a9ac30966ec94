/**
 * The per-organization counters of listed orders (org_order_counts, org_order_days): a batch's
 * changes are summed per counter and each counter is written once, by its net change.
 */
import type { Statement } from 'better-sqlite3';
import { counterChanges, counterKeys, type OrderListing } from '../../projections/orders/listing.js';
import type { OrderRow } from '../../projections/orders/rows.js';

/** The prepared `writeSql` statements the counters write with. */
export type CounterStatements = Record<
  | 'increaseOrderCount'
  | 'decreaseOrderCount'
  | 'dropEmptyOrderCount'
  | 'increaseOrderDay'
  | 'decreaseOrderDay'
  | 'dropEmptyOrderDay',
  Statement
>;

/**
 * A per-organization counter table of listed orders. `of` names a listing's counter in the order
 * of the table's key columns, as its statements take them; `deltas` holds the batch's net change
 * per counter, keyed by those names.
 */
interface ListingCounter {
  of: (listing: OrderListing) => (number | string)[];
  increase: keyof CounterStatements;
  decrease: keyof CounterStatements;
  dropEmpty: keyof CounterStatements;
  deltas: Map<string, { names: (number | string)[]; delta: number }>;
}

/** The counters a listed order counts in, each with its net changes in the batch being applied. */
export class ListingCounters {
  private readonly counters: ListingCounter[];

  /** `s` is read at `flush` only: a file without these tables (the keys store's) never prepares them */
  constructor(private readonly s: CounterStatements) {
    this.counters = [
      {
        of: counterKeys.orgOrderCounts,
        increase: 'increaseOrderCount',
        decrease: 'decreaseOrderCount',
        dropEmpty: 'dropEmptyOrderCount',
        deltas: new Map(),
      },
      {
        of: counterKeys.orgOrderDays,
        increase: 'increaseOrderDay',
        decrease: 'decreaseOrderDay',
        dropEmpty: 'dropEmptyOrderDay',
        deltas: new Map(),
      },
    ];
  }

  /** Adds an order row's change to the batch's net change per counter; `flush` writes them. */
  count(before: OrderRow | undefined, after: OrderRow): void {
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

  /** Writes every counter the batch moved, by its net change; drops counters that reach zero. */
  flush(): void {
    for (const { deltas, increase, decrease, dropEmpty } of this.counters) {
      for (const { names, delta } of deltas.values()) {
        if (delta > 0) this.s[increase].run(...names, delta);
        if (delta < 0) {
          this.s[decrease].run(-delta, ...names);
          this.s[dropEmpty].run(...names);
        }
      }
    }
  }

  /** Forgets the net changes collected (after the batch's commit or its failure). */
  clear(): void {
    for (const counter of this.counters) counter.deltas.clear();
  }
}

/**
 * A page of GET /orders from the read statements: at an offset (stepping the index, or from the day
 * holding the offset when it is deep), or after or before a key (a cursor's page: one seek of the
 * same index). Every statement is scoped by organization in SQL.
 */
import type { Statement } from 'better-sqlite3';
import { answerColumns, orderFields } from '../../projections/orders/answers.js';
import { pageStart, type OrdersOfDay } from '../../projections/orders/paging.js';
import { orderOfRow } from './answer-rows.js';
import type { ListingKey, OrderPage, OrderPageQuery } from './model-reads.js';
import type { ReadStatements } from './reader-statements.js';

type RawRow = readonly unknown[];

const columns = answerColumns(orderFields);
/** Where a page row holds its key: `created_at_sub` follows the answer's columns (`readSql`). */
const at = { ms: columns.indexOf('created_at_ms'), sub: columns.length, id: columns.indexOf('order_id') };

function keyOf(row: RawRow | undefined): ListingKey | null {
  if (row === undefined) return null;
  return {
    createdAtMs: row[at.ms] as number,
    createdAtSub: row[at.sub] as number,
    orderId: row[at.id] as number,
  };
}

function pageOf(rows: readonly RawRow[], total: number, more: boolean): OrderPage {
  return {
    orders: rows.map(orderOfRow),
    total,
    firstKey: keyOf(rows[0]),
    lastKey: keyOf(rows[rows.length - 1]),
    more,
  };
}

/** One page of the organization's listed orders; call it inside one read transaction. */
export function readOrderPage(
  reads: ReadStatements,
  deepOffsetFrom: number,
  query: OrderPageQuery,
): OrderPage {
  const s = reads.queries;
  const all = query.status === null;
  const { total } = (all ? s.countOrders : s.countOrdersByStatus).get(query) as { total: number };
  if (query.from !== undefined) return keysetPage(reads, query, query.from, total);
  const list = all ? s.listOrders : s.listOrdersByStatus;
  let rows: RawRow[] = [];
  if (query.offset < deepOffsetFrom || reads.perDay === null) {
    rows = list.all(query) as RawRow[];
  } else if (query.offset < total) {
    const days = all ? reads.perDay.ordersPerDay : reads.perDay.ordersPerDayByStatus;
    // The day holding the order at the offset, found by summing whole days from the newest.
    const start = pageStart(days.iterate(query) as Iterable<OrdersOfDay>, query.offset);
    rows = (
      start === null
        ? list.all(query)
        : (all ? s.listOrdersFromDay : s.listOrdersByStatusFromDay).all({
            ...query,
            day: start.day,
            offset: query.offset - start.newer,
          })
    ) as RawRow[];
  }
  return pageOf(rows, total, false);
}

/**
 * The `limit` orders nearest `from.key` in its direction, newest first. One row more is read to
 * know whether more follow; orders before a key are read oldest first and turned round.
 */
function keysetPage(
  reads: ReadStatements,
  query: OrderPageQuery,
  from: NonNullable<OrderPageQuery['from']>,
  total: number,
): OrderPage {
  const s = reads.queries;
  const all = query.status === null;
  const statement: Statement =
    from.direction === 'after'
      ? all
        ? s.listOrdersAfter
        : s.listOrdersByStatusAfter
      : all
        ? s.listOrdersBefore
        : s.listOrdersByStatusBefore;
  const rows = statement.all({
    orgId: query.orgId,
    status: query.status,
    limit: query.limit + 1,
    ...from.key,
  }) as RawRow[];
  const more = rows.length > query.limit;
  const shown = rows.slice(0, query.limit);
  if (from.direction === 'before') shown.reverse();
  return pageOf(shown, total, more);
}

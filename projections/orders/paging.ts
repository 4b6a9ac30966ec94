/**
 * The plan of a deep page of GET /orders: instead of stepping over every newer order in the index,
 * whole days are summed from the newest (`org_order_days`, a few hundred rows per year), and the page
 * is read from the day that holds its first order, with the offset counted within that day.
 */

/**
 * From this offset on, a page starts from the day holding its first order instead of stepping over
 * every newer order; below it stepping the index is cheaper.
 */
export const deepOffsetFrom = 2000;

/** Listed orders of one UTC day (one row per status; both statuses of a day are adjacent). */
export type OrdersOfDay = readonly [day: number, orders: number];

/** Where a page starts: its first order's day and how many listed orders are newer than that day. */
export interface PageStart {
  day: number;
  newer: number;
}

/**
 * The start of the page at `offset`, from the organization's per-day counts newest day first; null
 * when the counts do not reach the offset (the page is empty).
 */
export function pageStart(daysNewestFirst: Iterable<OrdersOfDay>, offset: number): PageStart | null {
  let seen = 0;
  let current = null as PageStart | null;
  for (const [day, orders] of daysNewestFirst) {
    if (current?.day !== day) current = { day, newer: seen };
    seen += orders;
    if (seen > offset) return current;
  }
  return null;
}

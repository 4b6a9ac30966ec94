/**
 * Where an order is counted while the API lists it, and how a change to an order moves the counters
 * kept with the model (`org_order_counts`, `org_order_days`): pure functions of the row before and the
 * row after. The writer adds up a batch's changes and writes each counter once.
 */
import type { OrderRow } from './rows.js';
import type { ListedStatus } from './status.js';

export const DAY_MS = 86_400_000;

/** Where an order is counted: null when the API does not list it. */
export interface OrderListing {
  orgId: number;
  status: ListedStatus;
  /** UTC day of created_at: floor(created_at_ms / 86 400 000) */
  day: number;
}

export function listingOf(row: OrderRow | undefined): OrderListing | null {
  if (row?.listed_status == null || row.org_id === null || row.created_at_ms === null) return null;
  return { orgId: row.org_id, status: row.listed_status, day: Math.floor(row.created_at_ms / DAY_MS) };
}

/** One listed order more (+1) or fewer (-1) under a listing's counters. */
export interface CounterChange {
  listing: OrderListing;
  delta: 1 | -1;
}

/** The counter changes of an order going from `before` to `after`: none while its listing stays. */
export function counterChanges(before: OrderRow | undefined, after: OrderRow): CounterChange[] {
  const was = listingOf(before);
  const is = listingOf(after);
  if (was?.orgId === is?.orgId && was?.status === is?.status && was?.day === is?.day) return [];
  return [
    ...(was === null ? [] : [{ listing: was, delta: -1 as const }]),
    ...(is === null ? [] : [{ listing: is, delta: 1 as const }]),
  ];
}

/** The keys of a listing's counters, in the order of each table's key columns. */
export const counterKeys = {
  orgOrderCounts: (l: OrderListing): [number, string] => [l.orgId, l.status],
  orgOrderDays: (l: OrderListing): [number, number, string] => [l.orgId, l.day, l.status],
};

/**
 * The organizations whose GET /orders answer an order change can alter: those it was listed in
 * before or is listed in after (an unlisted order shows nowhere).
 */
export function organizationsShowing(before: OrderRow | undefined, after: OrderRow): number[] {
  const orgs = new Set<number>();
  for (const row of [before, after]) {
    if (row?.listed_status != null && row.org_id !== null) orgs.add(row.org_id);
  }
  return [...orgs];
}

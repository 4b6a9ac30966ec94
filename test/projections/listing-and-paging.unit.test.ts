import { describe, expect, it } from 'vitest';
import { emptyOrder } from '../../projections/orders/order-events.js';
import { counterChanges, DAY_MS, organizationsShowing } from '../../projections/orders/listing.js';
import { pageStart } from '../../projections/orders/paging.js';
import type { OrderRow } from '../../projections/orders/rows.js';

const listed = (orgId: number, status: 'finished' | 'processing', createdAtMs: number): OrderRow => ({
  ...emptyOrder(7),
  org_id: orgId,
  created_at_ms: createdAtMs,
  listed_status: status,
});

describe('listing counters (pure)', () => {
  const day3 = 3 * DAY_MS + 5;
  it('a new listed order counts once under its organization, status and UTC day', () => {
    expect(counterChanges(undefined, listed(1, 'processing', day3))).toEqual([
      { listing: { orgId: 1, status: 'processing', day: 3 }, delta: 1 },
    ]);
  });
  it('a status change moves the order from one counter to the other', () => {
    expect(counterChanges(listed(1, 'processing', day3), listed(1, 'finished', day3))).toEqual([
      { listing: { orgId: 1, status: 'processing', day: 3 }, delta: -1 },
      { listing: { orgId: 1, status: 'finished', day: 3 }, delta: 1 },
    ]);
  });
  it('a change that keeps organization, status and day moves no counter', () => {
    expect(
      counterChanges(listed(1, 'finished', day3), { ...listed(1, 'finished', day3), title: 'x' }),
    ).toEqual([]);
  });
  it('an order that stops being listed leaves its counter, and shows in the organization it left', () => {
    const before = listed(2, 'finished', day3);
    const after = { ...before, listed_status: null };
    expect(counterChanges(before, after)).toEqual([
      { listing: { orgId: 2, status: 'finished', day: 3 }, delta: -1 },
    ]);
    expect(organizationsShowing(before, after)).toEqual([2]);
    expect(organizationsShowing(undefined, { ...emptyOrder(8), org_id: 2 })).toEqual([]);
  });
});

describe('deep page plan (pure)', () => {
  // newest day first; day 9 has both statuses in adjacent rows
  const days = [
    [9, 2],
    [9, 3],
    [8, 4],
    [5, 1],
  ] as const;
  it('starts a page on the day holding its first order, with the orders of newer days counted', () => {
    expect(pageStart(days, 0)).toEqual({ day: 9, newer: 0 });
    expect(pageStart(days, 4)).toEqual({ day: 9, newer: 0 });
    expect(pageStart(days, 5)).toEqual({ day: 8, newer: 5 });
    expect(pageStart(days, 9)).toEqual({ day: 5, newer: 9 });
  });
  it('has no start beyond the last listed order', () => {
    expect(pageStart(days, 10)).toBeNull();
    expect(pageStart([], 0)).toBeNull();
  });
});

/**
 * The order events' rules: each of order.created, order.updated, order.deleted and
 * order.status_changed sets the field groups it names, each group only when the fact supersedes
 * the group's stored stamp, and the row's listed status follows from the result.
 */
import type { OrderCreated, OrderDeleted, OrderStatusChanged, OrderUpdated } from '../../schemas/events.js';
import type { OrderRow } from './rows.js';
import { listedStatusOf, type ListedStatus } from './status.js';
import { supersedes, type FactStamp } from '../facts/fact-stamp.js';
import { instantOf, storedStamp, toEpochMs, stampOf } from '../facts/stamps.js';

/** What an order event changes: the row before and after it. */
export interface OrderChange {
  table: 'orders';
  before: OrderRow | undefined;
  row: OrderRow;
}

export function emptyOrder(orderId: number): OrderRow {
  return {
    order_id: orderId,
    org_id: null,
    member_id: null,
    created_at_ms: null,
    created_at_sub: null,
    created_v_at: null,
    created_v_sub: null,
    created_v_id: null,
    title: null,
    title_v_at: null,
    title_v_sub: null,
    title_v_id: null,
    distribution_ms: null,
    distribution_v_at: null,
    distribution_v_sub: null,
    distribution_v_id: null,
    status: null,
    status_v_at: null,
    status_v_sub: null,
    status_v_id: null,
    deleted_v_at: null,
    deleted_v_sub: null,
    deleted_v_id: null,
    listed_status: null,
  };
}

/**
 * An order is listed while it exists (order.created seen), is not deleted by a
 * deletion at or after its creation, and its status maps to an external one.
 */
function listedStatusOfRow(row: OrderRow): ListedStatus | null {
  // A deletion wins over a creation at the same instant; a creation strictly later re-creates.
  const exists =
    row.created_v_at !== null &&
    (row.deleted_v_at === null ||
      row.deleted_v_at < row.created_v_at ||
      (row.deleted_v_at === row.created_v_at && (row.deleted_v_sub ?? 0) < (row.created_v_sub ?? 0)));
  return exists && row.status !== null ? listedStatusOf(row.status) : null;
}

function orderChange(before: OrderRow | undefined, next: OrderRow): OrderChange {
  // `next` is the event's own copy of the row: completing it in place copies nothing more.
  next.listed_status = listedStatusOfRow(next);
  return { table: 'orders', before, row: next };
}

/** The field groups of an order; each has its own `<group>_v_at` / `<group>_v_id` stamp columns. */
type OrderFieldGroup = 'created' | 'title' | 'distribution' | 'status' | 'deleted';

/**
 * Applies each (group, values) whose fact supersedes the group's stored
 * stamp; null when none does (a duplicate or a stale fact).
 */
function applyOrderGroups(
  orderId: number,
  current: OrderRow | undefined,
  v: FactStamp,
  updates: readonly (readonly [OrderFieldGroup, Partial<OrderRow>])[],
): OrderChange | null {
  // One copy of the row per event, made when the first group changes (the current row is never mutated).
  let next: OrderRow | null = null;
  const base = current ?? emptyOrder(orderId);
  for (const [group, values] of updates) {
    const row = next ?? base;
    if (!supersedes(v, storedStamp(row[`${group}_v_at`], row[`${group}_v_sub`], row[`${group}_v_id`]))) {
      continue;
    }
    next ??= { ...base };
    Object.assign(next, values);
    next[`${group}_v_at`] = v.at;
    next[`${group}_v_sub`] = v.sub;
    next[`${group}_v_id`] = v.id;
  }
  return next === null ? null : orderChange(current, next);
}

const distributionMs = (date: string | null): number | null => (date === null ? null : toEpochMs(date));

export function applyOrderCreated(event: OrderCreated, current: OrderRow | undefined): OrderChange | null {
  const d = event.data;
  const created = instantOf(d.created_at);
  return applyOrderGroups(d.order_id, current, stampOf(event), [
    [
      'created',
      {
        org_id: d.organization_id,
        member_id: d.member_id,
        created_at_ms: created.ms,
        created_at_sub: created.sub,
      },
    ],
    ['title', { title: d.press_release_title }],
    ['distribution', { distribution_ms: distributionMs(d.distribution_date) }],
    ['status', { status: d.status }],
  ]);
}

export function applyOrderUpdated(event: OrderUpdated, current: OrderRow | undefined): OrderChange | null {
  const { order_id, press_release_title, distribution_date } = event.data;
  return applyOrderGroups(order_id, current, stampOf(event), [
    ...(press_release_title === undefined ? [] : [['title', { title: press_release_title }] as const]),
    ...(distribution_date === undefined
      ? []
      : [['distribution', { distribution_ms: distributionMs(distribution_date) }] as const]),
  ]);
}

export function applyOrderDeleted(event: OrderDeleted, current: OrderRow | undefined): OrderChange | null {
  return applyOrderGroups(event.data.order_id, current, stampOf(event), [['deleted', {}]]);
}

export function applyOrderStatusChanged(
  event: OrderStatusChanged,
  current: OrderRow | undefined,
): OrderChange | null {
  return applyOrderGroups(event.data.order_id, current, stampOf(event), [
    ['status', { status: event.data.status }],
  ]);
}

/**
 * The `cursor` of GET /orders: an opaque name of a place in the listing's order, given in the `next`
 * and `prev` links (`conditional.ts`), that a request sends back to read the orders just after it
 * (older) or just before it (newer), whatever was inserted since.
 *
 * It is base64url (no padding) of `1.<a|b>.<status>.<created_at ms>.<created_at ns within the ms>.<id>`:
 * a format version, after or before, the status filter of the page it came from, and the key of the
 * last (after) or first (before) order shown. Only a position in the order: the page is read in the
 * caller's organization whatever the cursor says, so a cursor of another organization's page names a
 * place and shows nothing of it. Every number is written canonically, and a cursor that is not
 * exactly what `encodeCursor` writes is refused (400).
 */
import { CURSOR_MAX_LENGTH, ORDER_STATUS_FILTERS, type OrderListQuery } from '../../schemas/api.js';
import type { ListingKey } from '../read-model/reader.js';

/** Longer cursors are refused (the query schema says so too); the longest this API writes is 75 characters. */
export const maxCursorLength = CURSOR_MAX_LENGTH;

export type OrderStatusFilter = OrderListQuery['status'];

export interface PageCursor {
  direction: 'after' | 'before';
  status: OrderStatusFilter;
  key: ListingKey;
}

const cursorFormat = '1';
const natural = (digits: number): string => `(0|[1-9]\\d{0,${digits - 1}})`;
const text = new RegExp(
  `^${cursorFormat}\\.([ab])\\.(${ORDER_STATUS_FILTERS.join('|')})\\.(0|-?[1-9]\\d{0,15})\\.${natural(6)}\\.${natural(16)}$`,
);
const base64url = /^[A-Za-z0-9_-]+$/;

export function encodeCursor(cursor: PageCursor): string {
  const { createdAtMs, createdAtSub, orderId } = cursor.key;
  const direction = cursor.direction === 'after' ? 'a' : 'b';
  return Buffer.from(
    `${cursorFormat}.${direction}.${cursor.status}.${createdAtMs}.${createdAtSub}.${orderId}`,
  ).toString('base64url');
}

/** The cursor `value` names; null when it is not one `encodeCursor` writes. */
export function decodeCursor(value: string): PageCursor | null {
  if (value.length === 0 || value.length > maxCursorLength || !base64url.test(value)) return null;
  const bytes = Buffer.from(value, 'base64url');
  if (bytes.toString('base64url') !== value) return null;
  const match = text.exec(bytes.toString('latin1'));
  if (match === null) return null;
  const [, direction, status, ms, sub, id] = match;
  const key = { createdAtMs: Number(ms), createdAtSub: Number(sub), orderId: Number(id) };
  if (!Number.isSafeInteger(key.createdAtMs) || !Number.isSafeInteger(key.orderId)) return null;
  return {
    direction: direction === 'a' ? 'after' : 'before',
    status: status as OrderStatusFilter,
    key,
  };
}

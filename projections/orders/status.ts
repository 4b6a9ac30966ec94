import type { OrderStatus } from '../../schemas/api.js';

/** What the API shows for an internal status (`ORDER_STATUSES`); an order of any other is not listed. */
export type ListedStatus = OrderStatus;

/**
 * The internal statuses the API lists, and what it shows for each. Draft, pending, cancelled and any
 * status upstream adds later are not listed. A shown status no internal status reaches fails
 * test/projections/status.unit.test.ts.
 */
export const listedStatuses: Readonly<Record<string, ListedStatus>> = {
  publishing: 'processing',
  publishing_ended: 'processing',
  finished: 'finished',
};

export function listedStatusOf(internalStatus: string): ListedStatus | null {
  return Object.hasOwn(listedStatuses, internalStatus) ? (listedStatuses[internalStatus] ?? null) : null;
}

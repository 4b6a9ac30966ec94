/**
 * The projection: pure functions from (event, current rows) to the rows to
 * write. No I/O, no clock. Convergence (docs/events.md) comes from comparing fact
 * versions per field group, so any interleaving and any redelivery of the same
 * facts yields the same rows.
 */
import type {
  ApiKeyIssued,
  ApiKeyRevoked,
  ArticlePublished,
  ArticleRemoved,
  DomainEvent,
  OrderCreated,
  OrderDeleted,
  OrderStatusChanged,
  OrderUpdated,
} from '../../schemas/events.js';
import type { ApiKeyRow, ArticleRow, OrderRow } from './rows.js';
import { listedStatusOf, type ListedStatus } from './status.js';
import { supersedes, type FactVersion } from './fact-version.js';

export interface CurrentRows {
  order(orderId: number): OrderRow | undefined;
  article(articleId: number): ArticleRow | undefined;
  apiKey(keyId: string): ApiKeyRow | undefined;
}

export type ReadModelChange =
  | { table: 'orders'; before: OrderRow | undefined; row: OrderRow }
  | { table: 'articles'; row: ArticleRow }
  | { table: 'api_keys'; row: ApiKeyRow };

export function toEpochMs(rfc3339: string): number {
  return Date.parse(rfc3339);
}

/**
 * An RFC 3339 timestamp at the precision given, up to nanoseconds: epoch milliseconds (of its
 * first three fractional digits, as `Date.parse` reads them) and the nanoseconds after them.
 */
export function instantOf(rfc3339: string): { ms: number; sub: number } {
  const fraction = /\.(\d+)/.exec(rfc3339)?.[1] ?? '';
  return { ms: Date.parse(rfc3339), sub: Number(fraction.slice(3, 9).padEnd(6, '0')) };
}

function versionOf(event: DomainEvent, rank: 0 | 1 = 0): FactVersion {
  const { ms, sub } = instantOf(event.occurred_at);
  return { at: ms, sub, rank, id: event.event_id };
}

function storedVersion(
  at: number | null,
  sub: number | null,
  id: string | null,
  rank: 0 | 1 = 0,
): FactVersion | null {
  return at === null || id === null ? null : { at, sub: sub ?? 0, rank, id };
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

function orderChange(before: OrderRow | undefined, next: OrderRow): ReadModelChange {
  // `next` is the event's own copy of the row: completing it in place copies nothing more.
  next.listed_status = listedStatusOfRow(next);
  return { table: 'orders', before, row: next };
}

/** The field groups of an order; each has its own `<group>_v_at` / `<group>_v_id` version columns. */
type OrderFieldGroup = 'created' | 'title' | 'distribution' | 'status' | 'deleted';

/**
 * Applies each (group, values) whose fact supersedes the group's stored
 * version; null when none does (a duplicate or a stale fact).
 */
function applyOrderGroups(
  orderId: number,
  current: OrderRow | undefined,
  v: FactVersion,
  updates: readonly (readonly [OrderFieldGroup, Partial<OrderRow>])[],
): ReadModelChange | null {
  // One copy of the row per event, made when the first group changes (the current row is never mutated).
  let next: OrderRow | null = null;
  const base = current ?? emptyOrder(orderId);
  for (const [group, values] of updates) {
    const row = next ?? base;
    if (!supersedes(v, storedVersion(row[`${group}_v_at`], row[`${group}_v_sub`], row[`${group}_v_id`]))) {
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

export function applyOrderCreated(
  event: OrderCreated,
  current: OrderRow | undefined,
): ReadModelChange | null {
  const d = event.data;
  const created = instantOf(d.created_at);
  return applyOrderGroups(d.order_id, current, versionOf(event), [
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

export function applyOrderUpdated(
  event: OrderUpdated,
  current: OrderRow | undefined,
): ReadModelChange | null {
  const { order_id, press_release_title, distribution_date } = event.data;
  return applyOrderGroups(order_id, current, versionOf(event), [
    ...(press_release_title === undefined ? [] : [['title', { title: press_release_title }] as const]),
    ...(distribution_date === undefined
      ? []
      : [['distribution', { distribution_ms: distributionMs(distribution_date) }] as const]),
  ]);
}

export function applyOrderDeleted(
  event: OrderDeleted,
  current: OrderRow | undefined,
): ReadModelChange | null {
  return applyOrderGroups(event.data.order_id, current, versionOf(event), [['deleted', {}]]);
}

export function applyOrderStatusChanged(
  event: OrderStatusChanged,
  current: OrderRow | undefined,
): ReadModelChange | null {
  return applyOrderGroups(event.data.order_id, current, versionOf(event), [
    ['status', { status: event.data.status }],
  ]);
}

/** The URL's host without a leading `www.`, as docs/events.md defines the default website domain. */
export function websiteDomainOf(articleUrl: string): string {
  return new URL(articleUrl).hostname.replace(/^www\./, '');
}

/** Articles and API keys keep one version per row: the latest fact about the entity. */
type VersionedRow = { v_at: number; v_sub: number; v_rank: 0 | 1; v_id: string };

/** The row a fact makes when it supersedes the current one, else null. Removals have rank 1. */
function newerRow<R extends VersionedRow>(
  event: DomainEvent,
  rank: 0 | 1,
  current: R | undefined,
  fields: Omit<R, keyof VersionedRow>,
): R | null {
  const v = versionOf(event, rank);
  const stored =
    current === undefined
      ? null
      : { at: current.v_at, sub: current.v_sub, rank: current.v_rank, id: current.v_id };
  if (!supersedes(v, stored)) return null;
  // Omit<R, …> plus the version columns is R; TypeScript cannot see that through the generic spread.
  return { ...fields, v_at: v.at, v_sub: v.sub, v_rank: rank, v_id: v.id } as R;
}

export function applyArticlePublished(
  event: ArticlePublished,
  current: ArticleRow | undefined,
): ReadModelChange | null {
  const data = event.data;
  const row = newerRow<ArticleRow>(event, 0, current, {
    article_id: data.article_id,
    order_id: data.order_id,
    article_url: data.article_url,
    website_domain: data.website_domain ?? websiteDomainOf(data.article_url),
    published_at_ms: toEpochMs(data.published_at),
    removed: 0,
  });
  return row === null ? null : { table: 'articles', row };
}

/** A tombstone: nothing of the article is kept but its order, so any order of facts leaves the same row. */
export function applyArticleRemoved(
  event: ArticleRemoved,
  current: ArticleRow | undefined,
): ReadModelChange | null {
  const row = newerRow<ArticleRow>(event, 1, current, {
    article_id: event.data.article_id,
    order_id: event.data.order_id,
    article_url: null,
    website_domain: null,
    published_at_ms: null,
    removed: 1,
  });
  return row === null ? null : { table: 'articles', row };
}

export function applyApiKeyIssued(
  event: ApiKeyIssued,
  current: ApiKeyRow | undefined,
): ReadModelChange | null {
  const row = newerRow<ApiKeyRow>(event, 0, current, {
    key_id: event.data.key_id,
    org_id: event.data.organization_id,
    key_sha256: event.data.key_sha256,
    revoked: 0,
  });
  return row === null ? null : { table: 'api_keys', row };
}

export function applyApiKeyRevoked(
  event: ApiKeyRevoked,
  current: ApiKeyRow | undefined,
): ReadModelChange | null {
  const row = newerRow<ApiKeyRow>(event, 1, current, {
    key_id: event.data.key_id,
    org_id: null,
    key_sha256: null,
    revoked: 1,
  });
  return row === null ? null : { table: 'api_keys', row };
}

/** The change one event makes to the read model, or null when it changes nothing. */
export function evolve(event: DomainEvent, current: CurrentRows): ReadModelChange | null {
  switch (event.type) {
    case 'order.created':
      return applyOrderCreated(event, current.order(event.data.order_id));
    case 'order.updated':
      return applyOrderUpdated(event, current.order(event.data.order_id));
    case 'order.deleted':
      return applyOrderDeleted(event, current.order(event.data.order_id));
    case 'order.status_changed':
      return applyOrderStatusChanged(event, current.order(event.data.order_id));
    case 'article.published':
      return applyArticlePublished(event, current.article(event.data.article_id));
    case 'article.removed':
      return applyArticleRemoved(event, current.article(event.data.article_id));
    case 'api_key.issued':
      return applyApiKeyIssued(event, current.apiKey(event.data.key_id));
    case 'api_key.revoked':
      return applyApiKeyRevoked(event, current.apiKey(event.data.key_id));
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled event ${JSON.stringify(unhandled)}`);
    }
  }
}

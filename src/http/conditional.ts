/**
 * Conditional requests for polling callers: an entity tag built from the model's digests of what an
 * answer shows (never from the answer itself, so a 304 costs no page read), compared weakly with
 * If-None-Match. A digest depends on the data alone, so a tag one replica gave earns a 304 from
 * every replica holding the same data.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PROJECTION_VERSION } from '../../projections/orders/schema.js';

/** A weak tag: the projection version, the digest and what the query selects (organization included). */
export function entityTag(digest: string, ...query: (string | number)[]): string {
  return `W/"${PROJECTION_VERSION}.${digest}.${query.join('.')}"`;
}

/** The opaque part of a tag, for weak comparison (RFC 9110 §8.8.3.2). */
function opaque(tag: string): string {
  return tag.trim().replace(/^W\//, '');
}

/** True when If-None-Match names `tag` (in a list, weakly) or is `*`. */
export function notModified(request: FastifyRequest, tag: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined) return false;
  if (header === tag) return true; // what a poller sends back most often: the tag as it came
  const wanted = opaque(tag);
  return header.split(',').some((candidate) => candidate.trim() === '*' || opaque(candidate) === wanted);
}

/**
 * Sets the validators of an answer that may be cached only by the caller, and revalidated each
 * time. `Vary` on the 200 whether or not it is compressed, and on the 304 as on the 200 (RFC 9110
 * §15.4.5).
 */
export function setValidators(reply: FastifyReply, tag: string): void {
  void reply
    .header('etag', tag)
    .header('cache-control', 'private, no-cache')
    .header('vary', 'accept-encoding');
}

/** Where a paging link leads: a page at an offset, or the page a cursor names (`cursor.ts`). */
export type PageTarget = { offset: number } | { cursor: string };

/** The offset of the last page of `total` orders, `limit` a page. */
export function lastPageOffset(total: number, limit: number): number {
  return total === 0 ? 0 : Math.floor((total - 1) / limit) * limit;
}

/** The `prev` of an offset page: the page before it, or the last one from beyond the end (none on the first page). */
export function offsetPrev(query: { limit: number; offset: number; total: number }): PageTarget | null {
  const { limit, offset, total } = query;
  return offset > 0 ? { offset: Math.max(0, Math.min(offset - limit, lastPageOffset(total, limit))) } : null;
}

/**
 * `Link` (RFC 8288) of GET /orders: the `first` and `last` pages (by offset) for the applied limit
 * and status, and the `prev` and `next` pages the route chose (a cursor, or an offset).
 */
export function pageLinks(
  path: string,
  query: { limit: number; status: string; total: number; prev: PageTarget | null; next: PageTarget | null },
): string {
  const { limit, status, total } = query;
  const url = (to: PageTarget): string =>
    'cursor' in to
      ? `<${path}?limit=${limit}&status=${status}&cursor=${to.cursor}>`
      : `<${path}?limit=${limit}&offset=${to.offset}&status=${status}>`;
  const links = [`${url({ offset: 0 })}; rel="first"`];
  if (query.prev !== null) links.push(`${url(query.prev)}; rel="prev"`);
  if (query.next !== null) links.push(`${url(query.next)}; rel="next"`);
  links.push(`${url({ offset: lastPageOffset(total, limit) })}; rel="last"`);
  return links.join(', ');
}

/** Replies of waiting requests (`change-waits.ts`) whose 304 is held: what `sendNotModified` found. */
const held = new WeakMap<FastifyReply, { unchanged: boolean }>();

/**
 * From now on `sendNotModified(reply)` sends nothing and records that the answer is unchanged
 * (`held.unchanged`), until `releaseNotModified(reply)`.
 */
export function holdNotModified(reply: FastifyReply): { unchanged: boolean } {
  const state = { unchanged: false };
  held.set(reply, state);
  return state;
}

export function releaseNotModified(reply: FastifyReply): void {
  held.delete(reply);
}

/**
 * 304 with no payload at all: Fastify then sends neither a body nor Content-Length and Content-Type
 * (a serialized `null` would announce 4 bytes that never come, and some clients wait for them).
 */
export function sendNotModified(reply: FastifyReply): void {
  const holding = held.get(reply);
  if (holding !== undefined) {
    holding.unchanged = true;
    return;
  }
  void reply.code(304).send();
}

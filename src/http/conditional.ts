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

/** `Link` (RFC 8288) to the first, previous, next and last page of GET /orders for the applied query. */
export function pageLinks(
  path: string,
  query: { limit: number; offset: number; status: string; total: number },
): string {
  const { limit, offset, status, total } = query;
  const url = (at: number): string => `<${path}?limit=${limit}&offset=${at}&status=${status}>`;
  const last = total === 0 ? 0 : Math.floor((total - 1) / limit) * limit;
  const links = [`${url(0)}; rel="first"`];
  if (offset > 0) links.push(`${url(Math.max(0, Math.min(offset - limit, last)))}; rel="prev"`);
  if (offset + limit < total) links.push(`${url(offset + limit)}; rel="next"`);
  links.push(`${url(last)}; rel="last"`);
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

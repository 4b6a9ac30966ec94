/**
 * The authenticated caller of a secured route, named once: authentication (`bearer-key.ts`,
 * `plugins/authenticate.ts`) makes it, routes scope every read by its organization, rate limits
 * count by its key and tracing names its organization.
 */
import type { FastifyRequest } from 'fastify';
import type { ApiError } from './api-error.js';

export interface Caller {
  /** the organization the key acts for: every read is scoped by it */
  orgId: number;
  /** SHA-256 of the caller's key: what rate limits are counted by (the raw key goes no further than auth) */
  keySha256: string;
}

/** The caller of a request, or the 401 to answer. */
export type Authenticated = (request: FastifyRequest) => Caller | ApiError;

declare module 'fastify' {
  interface FastifyRequest {
    /** set by authentication before any secured route runs; absent on the routes before it */
    caller: Caller;
  }
}

/**
 * What the endpoints share: the order id of a path, the 304 and the errors every secured route may answer. Built
 * when a route is registered, not at load, so that the contract test sees every text evaluated
 * (functions, not constant arrows: mutation testing then sees them run inside a test).
 */
import { z } from 'zod';
import { ErrorBody } from '../../../schemas/api.js';

/**
 * The order id a path names: decimal digits, leading zeros allowed. Anything else, or an id beyond
 * 2^53 − 1 (which the contract caps), names no order: 0, an id no order has.
 */
export function orderIdOf(id: string): number {
  const value = /^\d+$/.test(id) ? Number(id) : 0;
  return Number.isSafeInteger(value) ? value : 0;
}

export function notModifiedResponse() {
  return z
    .null()
    .describe(
      'Not Modified: If-None-Match names the current ETag (weak comparison; a list of tags and `*` are accepted). No body.',
    );
}

/**
 * An answer with a JSON body, in the form that keeps a named schema a reference in the document
 * (`#/components/schemas/…`): client generators then make one type of it, not one per status.
 */
export function jsonAnswer<Schema extends z.ZodType>(description: string, schema: Schema) {
  return { description, content: { 'application/json': { schema } } };
}

export function securedErrorResponses() {
  return {
    401: jsonAnswer('Missing, malformed, unknown or revoked API key', ErrorBody),
    429: jsonAnswer(
      'Too many requests: the key has used its `X-RateLimit-Limit` requests in the current window; `Retry-After` says in how many seconds it may make more.',
      ErrorBody,
    ),
    431: jsonAnswer('Request headers (the URL included) exceed 16 KiB', ErrorBody),
    500: jsonAnswer('An unexpected failure of the service (logged; the body names no internals)', ErrorBody),
    default: jsonAnswer(
      'Any other failure, e.g. 400 for a request that is not valid HTTP; always the Error object',
      ErrorBody,
    ),
  };
}

/** The answers of a request presenting a position (`X-Read-Position`, `../position.ts`). */
export function positionErrorResponses() {
  return {
    400: jsonAnswer(
      'Invalid read position: `X-Read-Position` is neither a token this API gave nor `topic=…;partition=…;offset=…` entries naming a topic the model is read from (at most 4 096 characters).',
      ErrorBody,
    ),
    503: jsonAnswer(
      'Position not reached: this replica has not applied everything the presented `X-Read-Position` names within `READ_POSITION_WAIT_MS`; `Retry-After` says when to try again (another replica may answer at once).',
      ErrorBody,
    ),
  };
}

/**
 * What both endpoints' schemas share: the 304 and the errors every secured route may answer. Built
 * when a route is registered, not at load, so that the contract test sees every text evaluated
 * (functions, not constant arrows: mutation testing then sees them run inside a test).
 */
import { z } from 'zod';
import { ErrorBody } from '../../../schemas/api.js';

export function notModifiedResponse() {
  return z
    .null()
    .describe(
      'Not Modified: If-None-Match names the current ETag (weak comparison; a list of tags and `*` are accepted). No body.',
    );
}

export function securedErrorResponses() {
  return {
    401: ErrorBody.describe('Missing, malformed, unknown or revoked API key'),
    429: ErrorBody.describe(
      'Too many requests: the key has used its `X-RateLimit-Limit` requests in the current window; `Retry-After` says in how many seconds it may make more.',
    ),
  };
}

/** The answers of a request presenting a position (`X-Read-Position`, `../position.ts`). */
export function positionErrorResponses() {
  return {
    400: ErrorBody.describe(
      'Invalid read position: `X-Read-Position` is not a token this API gave (at most 4 096 characters).',
    ),
    503: ErrorBody.describe(
      'Position not reached: this replica has not applied everything the presented `X-Read-Position` names within `READ_POSITION_WAIT_MS`; `Retry-After` says when to try again (another replica may answer at once).',
    ),
  };
}

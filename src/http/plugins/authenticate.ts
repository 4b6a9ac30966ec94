/** Authentication of a scope's routes: every request carries a valid key, or is answered 401 before routing on. */
import type { FastifyInstance } from 'fastify';
import { ApiError, sendError } from '../api-error.js';
import type { Authenticated } from './error-answers.js';

declare module 'fastify' {
  interface FastifyRequest {
    orgId: number;
    /** SHA-256 of the caller's key: what rate limits are counted by (the raw key goes no further than auth) */
    keySha256: string;
  }
}

export function authentication(scope: FastifyInstance, authenticated: Authenticated): void {
  scope.addHook('onRequest', (request, reply, done) => {
    const outcome = authenticated(request);
    if (outcome instanceof ApiError) {
      void sendError(reply, outcome);
      return;
    }
    request.orgId = outcome.orgId;
    request.keySha256 = outcome.keySha256;
    done();
  });
}

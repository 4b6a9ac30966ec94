/** Authentication of a scope's routes: every request carries a valid key, or is answered 401 before routing on. */
import type { FastifyInstance } from 'fastify';
import { ApiError, sendError } from '../api-error.js';
import type { Authenticated } from '../caller.js';

export function authentication(scope: FastifyInstance, authenticated: Authenticated): void {
  scope.addHook('onRequest', (request, reply, done) => {
    const outcome = authenticated(request);
    if (outcome instanceof ApiError) {
      void sendError(reply, outcome);
      return;
    }
    request.caller = outcome;
    done();
  });
}

/**
 * Every failure answers with the Error object (`error`, `message`): errors raised before routing,
 * malformed HTTP, validation (a route names its 422 and 400 texts in `config.queryErrors`), unknown routes
 * (401 first without a valid key) and unexpected failures (500, logged, no internals).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyServerOptions } from 'fastify';
import { ApiError, orderNotFound, sendError, statusError } from '../api-error.js';
import type { Authenticated } from '../caller.js';
import { echoRequestId } from './observability.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the answer to an invalid query parameter, by parameter name */
    queryErrors?: Record<string, ApiError>;
  }
}

const clientErrorMessages: Record<number, string> = {
  431: 'Request headers (including the URL) exceed 16 KiB.',
  400: 'The request could not be parsed as HTTP.',
};

/** Fastify options for what fails before a route runs. */
export function frameworkErrorOptions(
  authenticated: Authenticated,
): Pick<FastifyServerOptions, 'frameworkErrors' | 'clientErrorHandler'> {
  return {
    frameworkErrors: (error, request, reply) => {
      // the router answers these before any onRequest hook runs
      echoRequestId(request, reply);
      const statusCode = error.statusCode ?? 400;
      if (error.code !== 'FST_ERR_MAX_PARAM_LENGTH') {
        void sendError(reply, statusError(statusCode, error.message));
        return;
      }
      // The only path parameter is an order id, and one this long is no order of the caller's; the
      // router rejects it before any hook runs, so the key is checked here.
      const caller = authenticated(request);
      void sendError(reply, caller instanceof ApiError ? caller : orderNotFound);
    },
    clientErrorHandler: (error: NodeJS.ErrnoException, socket) => {
      // Node rejects oversized headers (and with them oversized URLs) before Fastify sees the request.
      const statusCode = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
      const answer = statusError(statusCode, clientErrorMessages[statusCode] ?? '');
      const body = JSON.stringify(answer.body());
      if (socket.writable) {
        socket.end(
          `HTTP/1.1 ${statusCode} ${answer.error}\r\nContent-Type: application/json; charset=utf-8\r\n` +
            // no request exists yet, so no id to reuse: a fresh one, as on every other answer
            `X-Request-Id: ${randomUUID()}\r\n` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else {
        socket.destroy(error);
      }
    },
  };
}

/** The error and not-found handlers of the application. */
export function errorHandling(app: FastifyInstance, authenticated: Authenticated): void {
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return sendError(reply, error);
    if (error.validation !== undefined) {
      const queryErrors = request.routeOptions.config.queryErrors ?? {};
      const field = error.validation
        .map((v) => {
          const issuePath = (v.params as { issue?: { path?: PropertyKey[] } } | undefined)?.issue?.path;
          const first = issuePath?.[0];
          return typeof first === 'string' ? first : v.instancePath.replace(/^\//, '');
        })
        .find((name) => name in queryErrors);
      const known = field === undefined ? undefined : queryErrors[field];
      return sendError(reply, known ?? statusError(400, error.message));
    }
    const statusCode = error.statusCode ?? 500;
    if (statusCode < 500) return sendError(reply, statusError(statusCode, error.message));
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, statusError(500, 'An unexpected error occurred.'));
  });

  app.setNotFoundHandler((request, reply) => {
    const caller = authenticated(request);
    return sendError(
      reply,
      caller instanceof ApiError
        ? caller
        : statusError(404, `No route ${request.method} ${request.url.split('?')[0] ?? ''}.`),
    );
  });
}

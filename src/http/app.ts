/**
 * The HTTP application: routes, authentication and error shapes. `buildApp`
 * does not listen; `server.ts` does, and tests inject or listen themselves.
 */
import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { API_PREFIX, ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import type { Logger } from '../logger.js';
import type { ServiceMetrics } from '../metrics.js';
import type { ApiReads } from '../read-model/reader.js';
import { authenticate } from './auth.js';
import { responseSerializerCompiler } from './serializer.js';
import { ApiError, orderNotFound, sendError, statusError } from './errors.js';
import { ordersRoutes } from './routes/orders.js';

declare module 'fastify' {
  interface FastifyRequest {
    orgId: number;
    /** SHA-256 of the caller's key: what rate limits are counted by (the raw key goes no further than auth) */
    keySha256: string;
  }
}

export interface AppDeps {
  /** the reader of the live generation, asked on every request (it changes when a rebuild is promoted) */
  readerOf: () => ApiReads;
  logger: Logger;
  metrics?: ServiceMetrics;
  /** per-key request limit; absent or max 0: no limit */
  rateLimit?: { max: number; windowMs: number };
}

/** Limits on what a client may send. Headers beyond Node's 16 KiB get 431 from Node itself. */
export const httpLimits = {
  maxParamLength: 200,
  bodyLimit: 1024,
} as const;

const clientErrorMessages: Record<number, string> = {
  431: 'Request headers (including the URL) exceed 16 KiB.',
  400: 'The request could not be parsed as HTTP.',
};

const queryParamErrors: Record<string, ApiError> = {
  status: new ApiError(
    422,
    'Invalid status',
    `status must be one of: ${ORDER_STATUS_FILTERS.map((s) => `\`${s}\``).join(', ')}.`,
  ),
  limit: new ApiError(
    422,
    'Invalid limit',
    'limit must be a decimal integer (values outside 1–200 are clamped).',
  ),
  offset: new ApiError(
    422,
    'Invalid offset',
    'offset must be a decimal integer (negative values count as 0, values beyond 2^53 − 1 as 2^53 − 1).',
  ),
};

export async function buildApp(deps: AppDeps, options: FastifyServerOptions = {}): Promise<FastifyInstance> {
  /** The caller's organization, or the 401 to answer: authentication comes before any 404 or 422. */
  const authenticated = (request: FastifyRequest): { orgId: number; keySha256: string } | ApiError =>
    authenticate(request.headers.authorization, (hash) => deps.readerOf().orgOfKeyHash(hash));
  const app = Fastify({
    loggerInstance: deps.logger,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    routerOptions: { maxParamLength: httpLimits.maxParamLength },
    bodyLimit: httpLimits.bodyLimit,
    // Errors raised before routing still answer with the Error object.
    frameworkErrors: (error, request, reply) => {
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
            `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      } else {
        socket.destroy(error);
      }
    },
    ...options,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializerCompiler());

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'External Orders API',
        version: '1.0.0',
        description: 'Read-only access to the press-release distribution orders of your organization.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'Your API key' } },
      },
    },
    transform: jsonSchemaTransform,
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    done(null, payload);
  });
  const httpDuration = deps.metrics?.httpDuration;
  if (httpDuration !== undefined) {
    app.addHook('onResponse', (request, reply, done) => {
      httpDuration.observe(
        {
          method: request.method,
          route: request.routeOptions.url ?? 'unmatched',
          status_code: String(reply.statusCode),
        },
        reply.elapsedTime / 1000,
      );
      done();
    });
  }

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return sendError(reply, error);
    if (error.validation !== undefined) {
      const field = error.validation
        .map((v) => {
          const issuePath = (v.params as { issue?: { path?: PropertyKey[] } } | undefined)?.issue?.path;
          const first = issuePath?.[0];
          return typeof first === 'string' ? first : v.instancePath.replace(/^\//, '');
        })
        .find((name) => name in queryParamErrors);
      const known = field === undefined ? undefined : queryParamErrors[field];
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

  await app.register(
    async (api) => {
      api.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
      await api.register(async (secured) => {
        secured.addHook('onRequest', (request, reply, done) => {
          const outcome = authenticated(request);
          if (outcome instanceof ApiError) {
            void sendError(reply, outcome);
            return;
          }
          request.orgId = outcome.orgId;
          request.keySha256 = outcome.keySha256;
          done();
        });
        const limit = deps.rateLimit;
        if (limit !== undefined && limit.max > 0) {
          await secured.register(rateLimit, {
            hook: 'preHandler',
            max: limit.max,
            timeWindow: limit.windowMs,
            keyGenerator: (request) => request.keySha256,
            errorResponseBuilder: (_request, context) =>
              new ApiError(
                429,
                'Too Many Requests',
                `At most ${context.max} requests per ${context.after} for one API key; retry after the time in Retry-After.`,
              ),
          });
        }
        await secured.register(ordersRoutes(deps.readerOf));
      });
    },
    { prefix: API_PREFIX },
  );
  return app;
}

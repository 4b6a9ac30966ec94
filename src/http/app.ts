/**
 * The HTTP application: routes, authentication and error shapes. `buildApp`
 * does not listen; `server.ts` does, and tests inject or listen themselves.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { API_PREFIX, ORDER_STATUS_FILTERS } from '../../schemas/api.js';
import type { Logger } from '../logger.js';
import type { ServiceMetrics } from '../metrics.js';
import type { ReadModelReader } from '../read-model/reader.js';
import { authenticate } from './auth.js';
import { ApiError, sendError, statusName } from './errors.js';
import { ordersRoutes } from './routes/orders.js';

declare module 'fastify' {
  interface FastifyRequest {
    orgId: number;
  }
}

export interface AppDeps {
  /** the reader of the live generation, asked on every request (it changes when a rebuild is promoted) */
  readerOf: () => ReadModelReader;
  logger: Logger;
  metrics?: ServiceMetrics;
}

/** Limits on what a client may send. Headers beyond Node's 16 KiB get 431 from Node itself. */
export const httpLimits = {
  maxParamLength: 200,
  bodyLimit: 1024,
} as const;

const queryParamErrors: Record<string, ApiError> = {
  status: new ApiError(
    422,
    'Invalid status',
    `status must be one of: ${ORDER_STATUS_FILTERS.map((s) => `\`${s}\``).join(', ')}.`,
  ),
  limit: new ApiError(422, 'Invalid limit', 'limit must be an integer (values outside 1–200 are clamped).'),
  offset: new ApiError(422, 'Invalid offset', 'offset must be an integer (negative values count as 0).'),
};

export async function buildApp(deps: AppDeps, options: FastifyServerOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    routerOptions: { maxParamLength: httpLimits.maxParamLength },
    bodyLimit: httpLimits.bodyLimit,
    ...options,
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

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
      return sendError(reply, known ?? new ApiError(400, 'Bad Request', error.message));
    }
    const statusCode = error.statusCode ?? 500;
    if (statusCode < 500)
      return sendError(reply, new ApiError(statusCode, statusName(statusCode), error.message));
    request.log.error({ err: error }, 'request failed');
    return sendError(reply, new ApiError(500, 'Internal Server Error', 'An unexpected error occurred.'));
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new ApiError(404, 'Not Found', `No route ${request.method} ${request.url.split('?')[0] ?? ''}.`),
    ),
  );

  await app.register(
    async (api) => {
      api.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
      await api.register(async (secured) => {
        secured.addHook('onRequest', (request, reply, done) => {
          const outcome = authenticate(request.headers.authorization, (hash) =>
            deps.readerOf().orgOfKeyHash(hash),
          );
          if (outcome instanceof ApiError) {
            void sendError(reply, outcome);
            return;
          }
          request.orgId = outcome.orgId;
          done();
        });
        await secured.register(ordersRoutes(deps.readerOf));
      });
    },
    { prefix: API_PREFIX },
  );
  return app;
}

/**
 * The HTTP application: a list of registrations, one concern per plugin (`plugins/`) and one file per
 * endpoint (`routes/`). `buildApp` does not listen: `service.ts` does, tests answer through
 * `app.inject`.
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { API_PREFIX } from '../../schemas/api.js';
import type { Logger } from '../logger.js';
import type { RequestMetrics } from '../request-metrics.js';
import type { ApiReads } from '../read-model/reader.js';
import type { Tracing } from '../tracing/spans.js';
import { authenticate } from './bearer-key.js';
import type { Authenticated } from './caller.js';
import { ChangeWaits, defaultWaitSettings, type WaitSettings } from './change-waits.js';
import { authentication } from './plugins/authenticate.js';
import { compression, type CompressionSettings } from './plugins/compression.js';
import { errorHandling, frameworkErrorOptions } from './plugins/error-answers.js';
import { observability, requestIdOptions, requestLogOptions } from './plugins/observability.js';
import { openApi, openApiRoute } from './plugins/openapi.js';
import { defaultPositionWaitMs, topicIdsOf } from './position.js';
import { rateLimiting, type RateLimit } from './plugins/rate-limit.js';
import { requestTracing, tracingOptions } from './plugins/tracing.js';
import { orderArticlesRoute } from './routes/order-articles.js';
import { orderListRoute } from './routes/orders-list.js';
import { responseSerializerCompiler } from './serializer.js';

export interface AppDeps {
  /** the reader of the live generation, asked on every request (it changes when a rebuild is promoted) */
  readerOf: () => ApiReads;
  logger: Logger;
  metrics?: Pick<RequestMetrics, 'httpDuration'>;
  /** per-key request limit; absent or max 0: no limit */
  rateLimit?: RateLimit;
  /** the limit's windows, shared by every request thread (`http/rate-windows.ts`); absent: this app's own */
  rateTable?: SharedArrayBuffer;
  /** shared memory counting requests, for projectors that give way to them (`projector/pacing.ts`) */
  requests?: Int32Array;
  /** other compression settings than the chosen ones (`plugins/compression.ts`), for the benchmark */
  compression?: CompressionSettings;
  /** a span per request (`plugins/tracing.ts`); absent: none, at no cost */
  tracing?: Tracing | undefined;
  /** how long a request waits for the position it presents (READ_POSITION_WAIT_MS; `position.ts`) */
  readPositionWaitMs?: number;
  /**
   * the topics the served model is read from (TOPIC_ORDERS, TOPIC_ORDER_STATUS, TOPIC_ARTICLES): a
   * presented position naming another (and not in the model's own position) is refused with 400
   * (`position.ts`); absent: any
   */
  modelTopics?: readonly string[];
  /**
   * waiting requests (`Prefer: wait=N`; `change-waits.ts`): their bounds (WAIT_MAX_*), and the
   * counters every request thread shares (`newWaitTable`) and this thread's region of them (0, the
   * main thread's, if absent); absent: the defaults, this app's own counters
   */
  waits?: { settings: WaitSettings; table?: SharedArrayBuffer; region?: number };
}

/** Limits on what a client may send. Headers beyond Node's 16 KiB get 431 from Node itself. */
export const httpLimits = {
  maxParamLength: 200,
  bodyLimit: 1024,
} as const;

export async function buildApp(deps: AppDeps, options: FastifyServerOptions = {}): Promise<FastifyInstance> {
  /** The caller's organization, or the 401 to answer: authentication comes before any 404 or 422. */
  const authenticated: Authenticated = (request) =>
    authenticate(request.headers.authorization, (hash) => deps.readerOf().orgOfKeyHash(hash));
  const app = Fastify({
    loggerInstance: deps.logger,
    ...requestIdOptions,
    ...requestLogOptions(),
    routerOptions: { maxParamLength: httpLimits.maxParamLength },
    bodyLimit: httpLimits.bodyLimit,
    ...frameworkErrorOptions(authenticated),
    ...tracingOptions(deps.tracing),
    ...options,
  }).withTypeProvider<ZodTypeProvider>();
  requestTracing(app, deps.tracing);
  // Request schemas compiled by zod (z.compile): a generated parser first, zod's own for what it does
  // not accept, so answers and error texts stay zod's.
  app.setValidatorCompiler((route) =>
    validatorCompiler({ ...route, schema: z.compile(route.schema as z.ZodType) }),
  );
  app.setSerializerCompiler(responseSerializerCompiler());
  await openApi(app);
  compression(app, deps.compression);
  observability(app, deps.metrics, deps.requests);
  errorHandling(app, authenticated);
  const changes = new ChangeWaits(
    deps.waits?.settings ?? defaultWaitSettings,
    () => deps.readerOf().commitEpochs?.() ?? null,
    deps.waits?.table,
    deps.waits?.region,
  );
  // Before the server stops: every held request is answered now, none is left to time out.
  app.addHook('preClose', (done) => {
    changes.close();
    done();
  });
  await app.register(
    async (api) => {
      openApiRoute(api, app);
      await api.register(async (secured) => {
        authentication(secured, authenticated);
        await rateLimiting(secured, deps.rateLimit, deps.rateTable);
        const positions = {
          waitMs: deps.readPositionWaitMs ?? defaultPositionWaitMs,
          ...(deps.modelTopics === undefined
            ? {}
            : { topicIds: topicIdsOf(deps.modelTopics), topics: new Set(deps.modelTopics) }),
          changes,
        };
        await secured.register(orderListRoute(deps.readerOf, positions));
        await secured.register(orderArticlesRoute(deps.readerOf, positions));
      });
    },
    { prefix: API_PREFIX },
  );
  return app;
}

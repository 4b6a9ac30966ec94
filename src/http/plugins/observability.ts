/** Request ids (a caller's `X-Request-Id` kept when sane, else a UUID; echoed on every answer), request metrics and the request log. */
import { randomUUID } from 'node:crypto';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';
import {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { countRequest } from '../../shared-flags.js';
import type { RequestMetrics } from '../../request-metrics.js';

export const requestIdOptions: Pick<FastifyServerOptions, 'genReqId'> = {
  genReqId: (request) => {
    const given = request.headers['x-request-id'];
    return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
  },
};

/** Echoes the request id; for answers given before any hook runs (framework errors). */
export function echoRequestId(request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('x-request-id', request.id);
}

/** An answer slower than this is logged at `warn` whatever the log level. */
export const slowRequestMs = 1000;

/**
 * Fastify's own lines per request, at `debug`: at `info`, the default, they cost more CPU than the
 * read itself. An error or a 5xx is still logged at `error` and a slow answer at `warn`, each with
 * its method and URL. A 503 with `Retry-After` (a read position not reached yet) is an answer the
 * caller is told to retry, not a failure: `debug`, counted in the request metrics as every answer.
 */
class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const responseTime = reply.elapsedTime;
    const status = reply.statusCode;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime }, 'request errored');
    else if (status >= 500 && !(status === 503 && reply.hasHeader('retry-after')))
      reply.log.error({ req: request, res: reply, responseTime }, 'request completed');
    else if (responseTime > slowRequestMs)
      reply.log.warn({ req: request, res: reply, responseTime }, 'slow request');
    else reply.log.debug({ res: reply, responseTime }, 'request completed');
  }

  override routeNotFound(request: FastifyRequest): void {
    request.log.debug(`Route ${request.method}:${request.url} not found`);
  }
}

type LineLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * A request's logger, made (pino's `child`, which writes out the request id's binding at once) only
 * when the request writes a line at a level that is on. Fastify asks for one per request; at the
 * default level an ordinary request writes none, and making it cost about 7 µs a request of pino's
 * time in `bench:profile` (its binding and its redaction; bench/README.md). A route's own level or
 * serializers make it at once.
 * Beside the level methods it answers pino's `bindings()`, `isLevelEnabled()` and `flush()`.
 */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #made: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  get level(): string {
    return this.#made?.level ?? this.#parent.level;
  }

  set level(level: string) {
    this.made().level = level;
  }

  made(): FastifyBaseLogger {
    return (this.#made ??= this.#parent.child(this.#bindings, this.#options));
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.made().child(bindings, options);
  }

  /** pino's: the bindings of this request's lines */
  bindings(): Bindings {
    return (this.made() as Partial<Pick<Logger, 'bindings'>>).bindings?.() ?? this.#bindings;
  }

  isLevelEnabled(level: string): boolean {
    const logger = (this.#made ?? this.#parent) as Partial<Pick<Logger, 'isLevelEnabled'>>;
    return logger.isLevelEnabled?.(level) ?? true;
  }

  flush(): void {
    (this.#parent as Partial<Pick<Logger, 'flush'>>).flush?.();
  }

  #line(level: LineLevel, args: unknown[]): void {
    const logger = this.#made ?? (this.isLevelEnabled(level) ? this.made() : undefined);
    if (logger !== undefined) logger[level](...(args as [string]));
  }

  fatal(...args: unknown[]): void {
    this.#line('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#line('error', args);
  }
  warn(...args: unknown[]): void {
    this.#line('warn', args);
  }
  info(...args: unknown[]): void {
    this.#line('info', args);
  }
  debug(...args: unknown[]): void {
    this.#line('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#line('trace', args);
  }
  silent(): void {}
}

/** The logger of one request: `RequestLogger`, or pino's child at once where the route sets its own level or serializers. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  const logger = new RequestLogger(parent, bindings, options);
  if (Object.keys(options).length > 0) logger.made();
  return logger;
}

export const requestLogOptions = (): Pick<FastifyServerOptions, 'logController' | 'childLoggerFactory'> => ({
  logController: new RequestLog(),
  childLoggerFactory: requestLogger,
});

export function observability(
  app: FastifyInstance,
  metrics: Pick<RequestMetrics, 'httpDuration'> | undefined,
  requests: Int32Array | undefined,
): void {
  // Set when the request arrives, not in onSend: every answer after it keeps its headers, and a
  // route with no onSend hook skips Fastify's onSend hook runner (the 304 path is mostly headers).
  app.addHook('onRequest', (request, reply, done) => {
    echoRequestId(request, reply);
    if (requests !== undefined) countRequest(requests);
    done();
  });
  const httpDuration = metrics?.httpDuration;
  if (httpDuration === undefined) return;
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

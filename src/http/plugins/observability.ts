/** Request ids (a caller's `X-Request-Id` kept when sane, else a UUID; echoed on every answer) and request metrics. */
import { randomUUID } from 'node:crypto';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
} from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';
import { countRequest } from '../../consumer/pacing.js';
import type { ServiceMetrics } from '../../metrics.js';

export const requestIdOptions: Pick<FastifyServerOptions, 'genReqId' | 'childLoggerFactory'> = {
  genReqId: (request) => {
    const given = request.headers['x-request-id'];
    return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
  },
  childLoggerFactory: (logger, bindings, options) =>
    options.level === undefined && options.serializers === undefined && isLevelAware(logger)
      ? new RequestLogger(logger, bindings)
      : logger.child(bindings, options),
};

type LevelAwareLogger = FastifyBaseLogger & { isLevelEnabled: (level: string) => boolean };

const isLevelAware = (logger: FastifyBaseLogger): logger is LevelAwareLogger =>
  typeof (logger as Partial<LevelAwareLogger>).isLevelEnabled === 'function';

/**
 * A request's logger (bound to its request id), made when the request first logs at an enabled
 * level. Fastify would otherwise make a pino child, its bindings serialized and redacted, for every
 * request, and most requests log nothing (a 304 poll at LOG_LEVEL=warn: about 2 % of its time).
 */
class RequestLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: LevelAwareLogger,
    private readonly bindings: Bindings,
  ) {}

  private logger(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  private log(level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return;
    const logger = this.logger();
    Reflect.apply(logger[level], logger, args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.logger().level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  silent(): void {}
}

/** Echoes the request id; for answers given before any hook runs (framework errors). */
export function echoRequestId(request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('x-request-id', request.id);
}

export function observability(
  app: FastifyInstance,
  metrics: ServiceMetrics | undefined,
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
  // One labelled child per method, route and status, found by a string key: prom-client's own
  // lookup hashes the label object on every observation.
  const series = new Map<string, { observe: (seconds: number) => void }>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let child = series.get(key);
    if (child === undefined) {
      child = httpDuration.labels({ method: request.method, route, status_code: String(reply.statusCode) });
      series.set(key, child);
    }
    child.observe(reply.elapsedTime / 1000);
    done();
  });
}

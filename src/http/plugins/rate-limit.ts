/** Requests per API key (by its SHA-256) and time window; the 429 is an Error object with Retry-After. */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

export interface RateLimit {
  max: number;
  windowMs: number;
}

/** Limits a scope's requests; absent or max 0: no limit. */
export async function rateLimiting(scope: FastifyInstance, limit: RateLimit | undefined): Promise<void> {
  if (limit === undefined || limit.max <= 0) return;
  await scope.register(rateLimit, {
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

/**
 * The peer's External Orders API (SPEC.md, with the answers DESIGN.md chose where SPEC is silent):
 * Fastify, node-postgres, one statement for a page with its total and one for an order with its
 * articles. Responses are serialized through Fastify's response schemas.
 *
 * The naive design looks the bearer key up by its SHA-256 on every request and counts the
 * organization's listed orders for every page. The competent one reads the total from the counts its
 * projector keeps, and remembers the organization of each active key it has looked up until its own
 * projector commits a batch of API keys (`KeyCache`), as the service does.
 */
import { hash } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Pool } from 'pg';
import type { PeerDesign } from './schema.js';

const prefix = '/api/external-api/v1';

interface ErrorBody {
  error: string;
  message: string;
}

const errors = {
  missingKey: {
    error: 'Unauthorized',
    message: 'Missing Authorization header; send `Authorization: Bearer <API_KEY>`.',
  },
  manyKeys: { error: 'Unauthorized', message: 'Send exactly one Authorization header.' },
  malformedKey: {
    error: 'Unauthorized',
    message: 'Malformed Authorization header; expected `Bearer <API_KEY>`.',
  },
  unknownKey: { error: 'Unauthorized', message: 'The API key is unknown or has been revoked.' },
  orderNotFound: {
    error: 'Not Found',
    message: 'The order was not found or is not accessible with this API key.',
  },
  status: { error: 'Invalid status', message: 'status must be one of: `all`, `finished`, `processing`.' },
  limit: {
    error: 'Invalid limit',
    message: 'limit must be a decimal integer (values outside 1–200 are clamped).',
  },
  offset: {
    error: 'Invalid offset',
    message:
      'offset must be a decimal integer (negative values count as 0, values beyond 2^53 − 1 as 2^53 − 1).',
  },
} satisfies Record<string, ErrorBody>;

const errorSchema = {
  type: 'object',
  properties: { error: { type: 'string' }, message: { type: 'string' } },
  required: ['error', 'message'],
} as const;

const timestamp = { type: 'string' } as const;

const orderListSchema = {
  type: 'object',
  properties: {
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          press_release_title: { type: 'string' },
          order_status: { type: 'string' },
          distribution_date_utc: timestamp,
          created_at: timestamp,
        },
      },
    },
    total: { type: 'integer' },
    limit: { type: 'integer' },
    offset: { type: 'integer' },
  },
} as const;

const articleListSchema = {
  type: 'object',
  properties: {
    order_id: { type: 'integer' },
    press_release_title: { type: 'string' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          id: { type: 'integer' },
          article_url: { type: 'string' },
          published_at: timestamp,
          website_domain: { type: 'string' },
        },
      },
    },
  },
} as const;

/** `YYYY-MM-DD HH:MM:SS` in UTC. */
function apiTimestamp(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19).replace('T', ' ');
}

/** A query integer: decimal digits with an optional sign, as the nearest safe integer; null when not one. */
function integerParam(value: unknown): number | null {
  if (typeof value !== 'string' || !/^[+-]?\d+$/.test(value)) return null;
  const n = BigInt(value);
  const max = BigInt(Number.MAX_SAFE_INTEGER);
  return Number(n > max ? max : n < -max ? -max : n);
}

const pageColumns = `o.order_id, o.title, o.listed_status, o.distribution_ms, o.created_ms`;
const newestFirst = `ORDER BY created_ms DESC, created_sub DESC, order_id DESC LIMIT $2 OFFSET $3`;

const pageOf = (
  where: string,
): string => `LEFT JOIN LATERAL (SELECT order_id, title, listed_status, distribution_ms, created_ms FROM orders
      WHERE org_id = $1 AND ${where} ${newestFirst}) o ON true`;
const listedAll = 'listed_status IS NOT NULL';
const listedWith = 'listed_status = $4';

/** The page and the total in one statement: a row per order, or one row of NULLs with the total. */
export const pageSql: Record<PeerDesign, { all: string; byStatus: string }> = {
  naive: {
    all: `SELECT t.total, ${pageColumns}
    FROM (SELECT count(*) AS total FROM orders WHERE org_id = $1 AND ${listedAll}) t ${pageOf(listedAll)}`,
    byStatus: `SELECT t.total, ${pageColumns}
    FROM (SELECT count(*) AS total FROM orders WHERE org_id = $1 AND ${listedWith}) t ${pageOf(listedWith)}`,
  },
  competent: {
    all: `SELECT t.total, ${pageColumns}
    FROM (SELECT coalesce(sum(n), 0)::bigint AS total FROM org_order_counts WHERE org_id = $1) t ${pageOf(listedAll)}`,
    byStatus: `SELECT t.total, ${pageColumns}
    FROM (SELECT coalesce(sum(n), 0)::bigint AS total FROM org_order_counts WHERE org_id = $1 AND listed_status = $4) t ${pageOf(listedWith)}`,
  },
};

export const articlesSql = `SELECT o.title, a.article_id, a.article_url, a.website_domain, a.published_ms
  FROM orders o LEFT JOIN articles a ON a.order_id = o.order_id AND NOT a.removed
  WHERE o.order_id = $1 AND o.org_id = $2 AND o.listed_status IS NOT NULL
  ORDER BY a.published_ms DESC, a.article_id DESC`;

export const orgOfKeySql = `SELECT org_id FROM api_keys WHERE key_sha256 = $1 AND NOT revoked LIMIT 1`;

declare module 'fastify' {
  interface FastifyRequest {
    orgId: number;
  }
}

function sendError(reply: FastifyReply, statusCode: number, body: ErrorBody): FastifyReply {
  if (statusCode === 401) void reply.header('www-authenticate', 'Bearer');
  return reply.code(statusCode).send(body);
}

interface PageRow {
  total: number;
  order_id: number | null;
  title: string;
  listed_status: string;
  distribution_ms: number | null;
  created_ms: number;
}

interface ArticleRow {
  title: string;
  article_id: number | null;
  article_url: string;
  website_domain: string;
  published_ms: number;
}

/**
 * The organizations of active keys looked up, by key SHA-256, until the projector of the same
 * process commits a batch of API keys (`invalidate`). A lookup that started before an invalidation
 * is not remembered: it may have read the key before its revocation.
 */
export class KeyCache {
  private readonly orgs = new Map<string, number>();
  private generation = 0;

  constructor(private readonly capacity = 10_000) {}

  invalidate(): void {
    this.generation += 1;
    this.orgs.clear();
  }

  async orgOf(keyHash: string, lookUp: () => Promise<number | undefined>): Promise<number | undefined> {
    const known = this.orgs.get(keyHash);
    if (known !== undefined) return known;
    const generation = this.generation;
    const org = await lookUp();
    if (org !== undefined && generation === this.generation && this.orgs.size < this.capacity)
      this.orgs.set(keyHash, org);
    return org;
  }
}

export async function buildPeerApp(
  pool: Pool,
  design: PeerDesign,
  keyCache?: KeyCache,
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  app.decorateRequest('orgId', 0);
  const pages = pageSql[design];

  const lookUp = (keyHash: string) => async (): Promise<number | undefined> =>
    (
      await pool.query<{ org_id: number }>({
        name: 'peer-org-of-key',
        text: orgOfKeySql,
        values: [keyHash],
      })
    ).rows[0]?.org_id;
  const authenticate = async (header: string | string[] | undefined): Promise<number | ErrorBody> => {
    if (header === undefined || header === '') return errors.missingKey;
    if (Array.isArray(header)) return errors.manyKeys;
    const key = /^Bearer +(\S+) *$/i.exec(header)?.[1];
    if (key === undefined || key.length > 512) return errors.malformedKey;
    const keyHash = hash('sha256', key, 'hex');
    const org = await (keyCache === undefined ? lookUp(keyHash)() : keyCache.orgOf(keyHash, lookUp(keyHash)));
    return org ?? errors.unknownKey;
  };

  app.setNotFoundHandler(async (request, reply) => {
    const caller = await authenticate(request.headers.authorization);
    if (typeof caller !== 'number') return sendError(reply, 401, caller);
    return sendError(reply, 404, {
      error: 'Not Found',
      message: `No route ${request.method} ${request.url.split('?')[0] ?? ''}.`,
    });
  });

  await app.register(
    (api, _options, done) => {
      api.addHook('onRequest', async (request, reply) => {
        const caller = await authenticate(request.headers.authorization);
        if (typeof caller !== 'number') return sendError(reply, 401, caller);
        request.orgId = caller;
        return undefined;
      });

      api.get<{ Querystring: Record<string, string | undefined> }>(
        '/orders',
        { schema: { response: { 200: orderListSchema, 422: errorSchema, 401: errorSchema } } },
        async (request, reply) => {
          const query = request.query;
          const status = query['status'] ?? 'all';
          if (status !== 'all' && status !== 'finished' && status !== 'processing')
            return sendError(reply, 422, errors.status);
          const limitParam = query['limit'] === undefined ? 50 : integerParam(query['limit']);
          if (limitParam === null) return sendError(reply, 422, errors.limit);
          const offsetParam = query['offset'] === undefined ? 0 : integerParam(query['offset']);
          if (offsetParam === null) return sendError(reply, 422, errors.offset);
          const limit = Math.min(200, Math.max(1, limitParam));
          const offset = Math.max(0, offsetParam);
          const { rows } =
            status === 'all'
              ? await pool.query<PageRow>({
                  name: 'peer-page-all',
                  text: pages.all,
                  values: [request.orgId, limit, offset],
                })
              : await pool.query<PageRow>({
                  name: 'peer-page-by-status',
                  text: pages.byStatus,
                  values: [request.orgId, limit, offset, status],
                });
          return {
            data: rows
              .filter((row) => row.order_id !== null)
              .map((row) => ({
                id: row.order_id,
                press_release_title: row.title,
                order_status: row.listed_status,
                distribution_date_utc: apiTimestamp(row.distribution_ms ?? row.created_ms),
                created_at: apiTimestamp(row.created_ms),
              })),
            total: rows[0]?.total ?? 0,
            limit,
            offset,
          };
        },
      );

      api.get<{ Params: { id: string } }>(
        '/orders/:id/articles',
        { schema: { response: { 200: articleListSchema, 404: errorSchema, 401: errorSchema } } },
        async (request, reply) => {
          const { id } = request.params;
          const orderId = /^\d+$/.test(id) && BigInt(id) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : 0;
          if (orderId < 1) return sendError(reply, 404, errors.orderNotFound);
          const { rows } = await pool.query<ArticleRow>({
            name: 'peer-articles',
            text: articlesSql,
            values: [orderId, request.orgId],
          });
          const first = rows[0];
          if (first === undefined) return sendError(reply, 404, errors.orderNotFound);
          return {
            order_id: orderId,
            press_release_title: first.title,
            data: rows
              .filter((row) => row.article_id !== null)
              .map((row) => ({
                id: row.article_id,
                article_url: row.article_url,
                published_at: apiTimestamp(row.published_ms),
                website_domain: row.website_domain,
              })),
          };
        },
      );
      done();
    },
    { prefix },
  );
  return app;
}

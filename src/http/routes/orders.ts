import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ArticleList,
  ErrorBody,
  LIMIT_DEFAULT,
  LIMIT_MAX,
  LIMIT_MIN,
  OrderIdParams,
  OrderList,
  OrderListQuery,
} from '../../../schemas/api.js';
import type { ApiReads } from '../../read-model/reader.js';
import { entityTag, notModified, pageLinks, sendNotModified, setValidators } from '../conditional.js';
import { orderNotFound, sendError } from '../errors.js';

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value));

const notModifiedResponse = z
  .null()
  .describe(
    'Not Modified: If-None-Match names the current ETag (weak comparison; a list of tags and `*` are accepted). No body.',
  );

const errorResponses = {
  401: ErrorBody.describe('Missing, malformed, unknown or revoked API key'),
  429: ErrorBody.describe('Too many requests'),
};

export function ordersRoutes(readerOf: () => ApiReads): FastifyPluginAsyncZod {
  return (app) => {
    app.get(
      '/orders',
      {
        schema: {
          summary: "List the organization's orders",
          description: 'Orders of all members of the organization, newest first (ties by id, descending).',
          security: [{ bearerAuth: [] }],
          querystring: OrderListQuery,
          response: {
            200: OrderList.describe(
              'The page. Headers: `ETag` (weak, from the organization’s change counter), `Cache-Control: private, no-cache`, `Link` (RFC 8288) with `first`, `prev`, `next` and `last` pages for the applied limit, offset and status.',
            ),
            304: notModifiedResponse,
            422: ErrorBody.describe('Invalid status, limit or offset'),
            ...errorResponses,
          },
        },
      },
      (request, reply) => {
        const { status } = request.query;
        const limit = clamp(request.query.limit ?? LIMIT_DEFAULT, LIMIT_MIN, LIMIT_MAX);
        const offset = Math.max(0, request.query.offset ?? 0);
        const reads = readerOf();
        const tag = entityTag(
          reads.modelIdentity(),
          reads.orgChanges(request.orgId),
          'o',
          status,
          limit,
          offset,
        );
        setValidators(reply, tag);
        if (notModified(request, tag)) {
          sendNotModified(reply);
          return;
        }
        const page = reads.orderPage({
          orgId: request.orgId,
          status: status === 'all' ? null : status,
          limit,
          offset,
        });
        void reply.header(
          'link',
          pageLinks(request.url.split('?')[0] ?? '', { limit, offset, status, total: page.total }),
        );
        return { data: page.orders, total: page.total, limit, offset };
      },
    );

    app.get(
      '/orders/:id/articles',
      {
        schema: {
          summary: 'List the published articles of one order',
          description: 'Articles newest first (ties by id, descending). No paging.',
          security: [{ bearerAuth: [] }],
          params: OrderIdParams,
          response: {
            200: ArticleList.describe(
              'The articles. Headers: `ETag` (weak, from the order’s change counter), `Cache-Control: private, no-cache`.',
            ),
            304: notModifiedResponse,
            404: ErrorBody.describe('The order does not exist or is not accessible'),
            ...errorResponses,
          },
        },
      },
      (request, reply) => {
        const { id } = request.params;
        // Decimal digits, leading zeros allowed; ids beyond 2^53 − 1 exist in no model (the contract caps them).
        const orderId = /^\d+$/.test(id) && BigInt(id) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : NaN;
        const reads = readerOf();
        const valid = Number.isSafeInteger(orderId) && orderId >= 1;
        // The counter moves with the order and its articles; the tag is only ever given for an order
        // the caller can see, so a 304 never confirms another organization's order.
        const tag = valid
          ? entityTag(reads.modelIdentity(), reads.orderChanges(orderId), 'a', request.orgId, orderId)
          : null;
        const found = valid ? reads.articlesOfOrder(request.orgId, orderId) : null;
        if (found !== null && tag !== null) {
          setValidators(reply, tag);
          if (notModified(request, tag)) {
            sendNotModified(reply);
            return;
          }
        }
        if (found === null) {
          // Answered, not thrown: an order the caller cannot see is an expected outcome, not a failure.
          void sendError(reply, orderNotFound);
          return;
        }
        return { order_id: orderId, press_release_title: found.title, data: found.articles };
      },
    );
    return Promise.resolve();
  };
}

import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
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
import { orderNotFound, sendError } from '../errors.js';

const clamp = (value: number, min: number, max: number): number => Math.min(max, Math.max(min, value));

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
            200: OrderList,
            422: ErrorBody.describe('Invalid status, limit or offset'),
            ...errorResponses,
          },
        },
      },
      (request) => {
        const { status } = request.query;
        const limit = clamp(request.query.limit ?? LIMIT_DEFAULT, LIMIT_MIN, LIMIT_MAX);
        const offset = Math.max(0, request.query.offset ?? 0);
        const page = readerOf().orderPage({
          orgId: request.orgId,
          status: status === 'all' ? null : status,
          limit,
          offset,
        });
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
            200: ArticleList,
            404: ErrorBody.describe('The order does not exist or is not accessible'),
            ...errorResponses,
          },
        },
      },
      (request, reply) => {
        const { id } = request.params;
        // Decimal digits, leading zeros allowed; ids beyond 2^53 − 1 exist in no model (the contract caps them).
        const orderId = /^\d+$/.test(id) && BigInt(id) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : NaN;
        const found =
          Number.isSafeInteger(orderId) && orderId >= 1
            ? readerOf().articlesOfOrder(request.orgId, orderId)
            : null;
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

/** GET /orders: one page of the organization's listed orders (SPEC "List orders"), with its schemas and error texts. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  ErrorBody,
  LIMIT_DEFAULT,
  LIMIT_MAX,
  LIMIT_MIN,
  ORDER_STATUS_FILTERS,
  OrderList,
  OrderListQuery,
} from '../../../schemas/api.js';
import type { ApiReads } from '../../read-model/reader.js';
import { entityTag, notModified, pageLinks, sendNotModified, setValidators } from '../conditional.js';
import { ApiError } from '../api-error.js';
import type { HeaderObject } from '../plugins/openapi-headers.js';
import { answerAtPosition, type PositionOptions } from '../position.js';
import { orderListJson, sendJsonText } from '../serializer.js';
import { jsonAnswer, notModifiedResponse, positionErrorResponses, securedErrorResponses } from './common.js';

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** The 422 answer for an invalid query parameter, by parameter (errors plugin: `config.queryErrors`). */
export function orderListQueryErrors(): Record<string, ApiError> {
  return {
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
}

/** The paging links a page sends (`pageLinks`), documented on its 200. */
const linkHeader = (): Record<string, HeaderObject> => ({
  Link: {
    description:
      'RFC 8288 links to the `first`, `prev` (when not on the first page), `next` (when more orders follow) and `last` pages, for the applied `limit`, `offset` and `status`.',
    schema: { type: 'string' },
  },
});

export function orderListRoute(readerOf: () => ApiReads, positions: PositionOptions): FastifyPluginAsyncZod {
  return (app) => {
    app.get(
      '/orders',
      {
        config: {
          queryErrors: orderListQueryErrors(),
          openApi: { operationId: 'listOrders', okHeaders: linkHeader },
        },
        schema: {
          summary: "List the organization's orders",
          tags: ['Orders'],
          description: 'Orders of all members of the organization, newest first (ties by id, descending).',
          security: [{ bearerAuth: [] }],
          querystring: OrderListQuery,
          response: {
            200: jsonAnswer(
              'The page. Headers: `ETag` (weak, naming the organization and the query, from a digest of its listed orders: equal on every replica holding the same orders), `X-Read-Position`, `Cache-Control: private, no-cache`, `Link` (RFC 8288) with `first`, `prev`, `next` and `last` pages for the applied limit, offset and status.',
              OrderList,
            ),
            304: notModifiedResponse(),
            422: jsonAnswer('Invalid status, or a limit or offset that is not a decimal integer', ErrorBody),
            ...securedErrorResponses(),
            ...positionErrorResponses(),
          },
        },
      },
      (request, reply) => {
        const { status } = request.query;
        const limit = clamp(request.query.limit ?? LIMIT_DEFAULT, LIMIT_MIN, LIMIT_MAX);
        const offset = Math.max(0, request.query.offset ?? 0);
        return answerAtPosition(request, reply, readerOf, positions, (model) => {
          const tag = entityTag(
            model.orgDigest(request.caller.orgId),
            'o',
            request.caller.orgId,
            status,
            limit,
            offset,
          );
          setValidators(reply, tag);
          if (notModified(request, tag)) {
            sendNotModified(reply);
            return;
          }
          const page = model.orderPage({
            orgId: request.caller.orgId,
            status: status === 'all' ? null : status,
            limit,
            offset,
          });
          void reply.header(
            'link',
            pageLinks(request.url.split('?')[0] ?? '', { limit, offset, status, total: page.total }),
          );
          sendJsonText(reply, orderListJson({ data: page.orders, total: page.total, limit, offset }));
        });
      },
    );
    return Promise.resolve();
  };
}

/** GET /orders/{id}/articles: the published articles of one order of the organization (SPEC "List articles"). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ArticleList, ErrorBody, OrderIdParams } from '../../../schemas/api.js';
import type { ApiReads } from '../../read-model/reader.js';
import { entityTag, notModified, sendNotModified, setValidators } from '../conditional.js';
import { orderNotFound, sendError } from '../api-error.js';
import { answerAtPosition, type PositionOptions } from '../position.js';
import { articleListJson, sendJsonText } from '../serializer.js';
import { notModifiedResponse, positionErrorResponses, securedErrorResponses } from './common.js';

export function orderArticlesRoute(
  readerOf: () => ApiReads,
  positions: PositionOptions,
): FastifyPluginAsyncZod {
  return (app) => {
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
              'The articles. Headers: `ETag` (weak, from a digest of the order’s title and articles: equal on every replica holding the same), `X-Read-Position`, `Cache-Control: private, no-cache`.',
            ),
            304: notModifiedResponse(),
            404: ErrorBody.describe('The order does not exist or is not accessible'),
            ...securedErrorResponses(),
            ...positionErrorResponses(),
          },
        },
      },
      (request, reply) => {
        const { id } = request.params;
        // Decimal digits, leading zeros allowed; ids beyond 2^53 − 1 exist in no model (the contract caps them).
        const orderId = /^\d+$/.test(id) && BigInt(id) <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : NaN;
        const valid = Number.isSafeInteger(orderId) && orderId >= 1;
        return answerAtPosition(request, reply, readerOf, positions, (model) => {
          // The digest moves with the order's title and its articles; the tag is only ever given for
          // an order the caller can see, so a 304 never confirms another organization's order.
          const tag = valid ? entityTag(model.orderDigest(orderId), 'a', request.orgId, orderId) : null;
          const found = valid ? model.articlesOfOrder(request.orgId, orderId) : null;
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
          sendJsonText(
            reply,
            articleListJson({ order_id: orderId, press_release_title: found.title, data: found.articles }),
          );
        });
      },
    );
    return Promise.resolve();
  };
}

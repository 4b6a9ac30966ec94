/** GET /orders/{id}/articles: the published articles of one order of the organization (SPEC "List articles"). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ArticleList, ErrorBody, OrderIdParams } from '../../../schemas/api.js';
import type { ApiReads } from '../../read-model/reader.js';
import { entityTag, notModified, sendNotModified, setValidators } from '../conditional.js';
import { orderNotFound, sendError } from '../api-error.js';
import { answerAtPosition, type PositionOptions } from '../position.js';
import { articleListJson, sendJsonText } from '../serializer.js';
import {
  jsonAnswer,
  notModifiedResponse,
  orderIdOf,
  positionErrorResponses,
  securedErrorResponses,
} from './common.js';

export function orderArticlesRoute(
  readerOf: () => ApiReads,
  positions: PositionOptions,
): FastifyPluginAsyncZod {
  return (app) => {
    app.get(
      '/orders/:id/articles',
      {
        config: { openApi: { operationId: 'listOrderArticles', okHeaders: () => ({}) } },
        schema: {
          summary: 'List the published articles of one order',
          tags: ['Orders'],
          description: 'Articles newest first (ties by id, descending). No paging.',
          security: [{ bearerAuth: [] }],
          params: OrderIdParams,
          response: {
            200: jsonAnswer(
              'The articles. Headers: `ETag` (weak, from a digest of the order’s title and articles: equal on every replica holding the same), `X-Read-Position`, `Cache-Control: private, no-cache`.',
              ArticleList,
            ),
            304: notModifiedResponse(),
            404: jsonAnswer('The order does not exist or is not accessible', ErrorBody),
            ...securedErrorResponses(),
            ...positionErrorResponses(),
          },
        },
      },
      (request, reply) => {
        const orderId = orderIdOf(request.params.id);
        return answerAtPosition(request, reply, readerOf, positions, (model) => {
          const found = model.articlesOfOrder(request.caller.orgId, orderId);
          if (found === null) {
            // Answered, not thrown: an order the caller cannot see is an expected outcome, not a failure.
            void sendError(reply, orderNotFound);
            return;
          }
          // The digest moves with the order's title and its articles; a tag is only ever given for
          // an order the caller can see, so a 304 never confirms another organization's order.
          const tag = entityTag(model.orderDigest(orderId), 'a', request.caller.orgId, orderId);
          setValidators(reply, tag);
          if (notModified(request, tag)) {
            sendNotModified(reply);
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

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
import type { ApiReads, OrderPage } from '../../read-model/reader.js';
import {
  entityTag,
  notModified,
  offsetPrev,
  pageLinks,
  sendNotModified,
  setValidators,
  type PageTarget,
} from '../conditional.js';
import { ApiError } from '../api-error.js';
import { decodeCursor, encodeCursor, maxCursorLength, type PageCursor } from '../cursor.js';
import type { HeaderObject } from '../plugins/openapi-headers.js';
import { answerAtPosition, type PositionOptions } from '../position.js';
import { orderListJson, sendJsonText } from '../serializer.js';
import { jsonAnswer, notModifiedResponse, positionErrorResponses, securedErrorResponses } from './common.js';

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** The answer for an invalid query parameter (422; 400 for a cursor), by parameter (errors plugin: `config.queryErrors`). */
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
    cursor: new ApiError(
      400,
      'Invalid cursor',
      `cursor must be one a \`next\` or \`prev\` link of this API gave, unchanged (at most ${maxCursorLength} characters).`,
    ),
    [cursorWithOtherStatus]: new ApiError(
      400,
      'Invalid cursor',
      'cursor names a place in a listing of another status: send it with the `status` of the link that gave it.',
    ),
    [cursorWithOffset]: new ApiError(
      400,
      'Invalid cursor',
      'cursor and offset exclude each other: a cursor names where the page starts. Send one of them.',
    ),
  };
}

/** Issue paths of the query's own checks, named in `orderListQueryErrors` (no parameter has these names). */
const cursorWithOtherStatus = 'cursor+status';
const cursorWithOffset = 'cursor+offset';

/**
 * The query as validated: a cursor must decode, and go with its own status and no offset. Checked
 * with the parameters, so that a bad one is a 400 answered before the rate limit counts the request.
 */
const orderListQuery = OrderListQuery.superRefine((query, context) => {
  // zod runs this after a parameter failed too: then the values may be the raw texts
  if (typeof query.cursor !== 'string') return;
  const cursor = decodeCursor(query.cursor);
  const issue = (path: string): void => context.addIssue({ code: 'custom', path: [path], message: path });
  if (cursor === null) issue('cursor');
  else if (cursor.status !== query.status) issue(cursorWithOtherStatus);
  if (query.offset !== undefined) issue(cursorWithOffset);
});

/**
 * The `prev` and `next` of a page. `next` names the last order shown by a cursor, on every page after
 * which more follow; `prev` names the first order shown by a cursor on a cursor's page, and is an
 * offset on an offset page (as it always was). An empty cursor page links neither way: `first` and
 * `last` remain.
 */
function neighbours(
  page: OrderPage,
  applied: { limit: number; offset: number; status: PageCursor['status'] },
  cursor: PageCursor | null,
): { prev: PageTarget | null; next: PageTarget | null } {
  const to = (direction: PageCursor['direction'], key: PageCursor['key'] | null): PageTarget | null =>
    key === null ? null : { cursor: encodeCursor({ direction, status: applied.status, key }) };
  if (cursor === null) {
    const more = applied.offset + applied.limit < page.total;
    return {
      prev: offsetPrev({ ...applied, total: page.total }),
      next: more ? to('after', page.lastKey) : null,
    };
  }
  const after = cursor.direction === 'after';
  return {
    prev: after || page.more ? to('before', page.firstKey) : null,
    next: !after || page.more ? to('after', page.lastKey) : null,
  };
}

/** The paging links a page sends (`pageLinks`), documented on its 200. */
const linkHeader = (): Record<string, HeaderObject> => ({
  Link: {
    description:
      'RFC 8288 links to the `first` and `last` pages (by `offset`), the `next` page (when more orders follow: a `cursor` naming the last order shown) and the `prev` page (an `offset` on an offset page past the first, a `cursor` naming the first order shown on a cursor page), for the applied `limit` and `status`.',
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
          querystring: orderListQuery,
          response: {
            200: jsonAnswer(
              'The page. Headers: `ETag` (weak, naming the organization and the query, from a digest of its listed orders: equal on every replica holding the same orders), `X-Read-Position`, `Cache-Control: private, no-cache`, `Link` (RFC 8288) with `first`, `prev`, `next` and `last` pages for the applied limit and status (`next`, and `prev` on a cursor page, by `cursor`).',
              OrderList,
            ),
            304: notModifiedResponse(),
            422: jsonAnswer('Invalid status, or a limit or offset that is not a decimal integer', ErrorBody),
            ...securedErrorResponses(),
            ...positionErrorResponses(),
            400: jsonAnswer(
              `Invalid cursor: \`cursor\` is not one a link gave, names another status, comes with an offset or is over ${maxCursorLength} characters. Invalid read position: \`X-Read-Position\` is neither a token this API gave nor \`topic=…;partition=…;offset=…\` entries naming a topic the model is read from (at most 4 096 characters).`,
              ErrorBody,
            ),
          },
        },
      },
      (request, reply) => {
        const { status } = request.query;
        const limit = clamp(request.query.limit ?? LIMIT_DEFAULT, LIMIT_MIN, LIMIT_MAX);
        const cursorText = request.query.cursor;
        // validated with the query (`orderListQuery`): a cursor given decodes
        const cursor = cursorText === undefined ? null : decodeCursor(cursorText);
        // A cursor's page starts at the cursor: the offset applied is 0 (none is counted).
        const offset = cursor === null ? Math.max(0, request.query.offset ?? 0) : 0;
        const where = cursorText === undefined ? [offset] : ['c', cursorText];
        return answerAtPosition(request, reply, readerOf, positions, (model) => {
          const tag = entityTag(
            model.orgDigest(request.caller.orgId),
            'o',
            request.caller.orgId,
            status,
            limit,
            ...where,
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
            ...(cursor === null ? {} : { from: { direction: cursor.direction, key: cursor.key } }),
          });
          const links = neighbours(page, { limit, offset, status }, cursor);
          void reply.header(
            'link',
            pageLinks(request.url.split('?')[0] ?? '', { limit, status, total: page.total, ...links }),
          );
          sendJsonText(reply, orderListJson({ data: page.orders, total: page.total, limit, offset }));
        });
      },
    );
    return Promise.resolve();
  };
}

/** The OpenAPI 3.1 document, generated from the routes' zod schemas (served at `<prefix>/openapi.json`). */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { API_PREFIX } from '../../../schemas/api.js';
import { sendJsonText } from '../serializer.js';

interface HeaderObject {
  description: string;
  schema: { type: 'string'; const?: string; enum?: string[] };
}

/** The validators both endpoints send, on 200 and on 304 (`conditional.ts`); new objects per use. */
const validatorHeaders = (): Record<string, HeaderObject> => ({
  ETag: {
    description:
      'Weak entity tag of the answer, derived from the projection version, a digest of what the answer shows (the organization’s listed orders for `/orders`, the order’s title and articles for articles) and what the request selects, the organization included. It depends on the data alone: every replica holding the same data gives the same tag. Send it back in `If-None-Match`.',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description: 'The answer may be kept by the caller only, and revalidated before each use.',
    schema: { type: 'string', const: 'private, no-cache' },
  },
});

/** What compression (`compression.ts`) sets: `Vary` on every 200 and 304, `Content-Encoding` when it compressed. */
const varyHeader = (): Record<string, HeaderObject> => ({
  Vary: {
    description:
      'The answer depends on `Accept-Encoding` (compressed or not), so that a shared cache keeps one copy per encoding.',
    schema: { type: 'string', const: 'accept-encoding' },
  },
});

const compressionHeaders = (): Record<string, HeaderObject> => ({
  'Content-Encoding': {
    description:
      'Present when the answer is compressed: an answer of 1 024 bytes or more, when `Accept-Encoding` accepts brotli (`br`, preferred) or gzip. `Content-Length` is then the compressed size.',
    schema: { type: 'string', enum: ['br', 'gzip'] },
  },
  ...varyHeader(),
});

const linkHeader = (): Record<string, HeaderObject> => ({
  Link: {
    description:
      'RFC 8288 links to the `first`, `prev` (when not on the first page), `next` (when more orders follow) and `last` pages, for the applied `limit`, `offset` and `status`.',
    schema: { type: 'string' },
  },
});

/** The budget headers of every answer to a known key while `RATE_LIMIT_MAX` is set (`rate-limit.ts`). */
const rateLimitHeaders = (): Record<string, HeaderObject> => ({
  'X-RateLimit-Limit': {
    description:
      'While the service limits requests (`RATE_LIMIT_MAX` > 0): requests one API key may make per window. Absent when there is no limit.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Remaining': {
    description:
      'Requests left to this key in the current window. A 304 Not Modified answer is not counted, and a 429 leaves 0.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Reset': {
    description: 'When the current window ends, in UTC epoch seconds (GitHub’s convention).',
    schema: { type: 'string' },
  },
});

const retryAfter = (): Record<string, HeaderObject> => ({
  'Retry-After': {
    description: 'Seconds until the window ends and the key may make requests again.',
    schema: { type: 'string' },
  },
});

const positionDescription =
  'The position of the replica’s model the answer was read from (what it had applied of every topic partition), as an opaque token of a few dozen characters.';

/** What every answer read from the model carries (`position.ts`). */
const positionHeaders = (): Record<string, HeaderObject> => ({
  'X-Read-Position': {
    description: `${positionDescription} Send the newest one received back in \`X-Read-Position\` so that no replica answers from an older model.`,
    schema: { type: 'string' },
  },
});

const readPosition = (): object => ({
  in: 'header',
  name: 'X-Read-Position',
  required: false,
  description: `${positionDescription} A token received before (at most 4 096 characters): the replica answers only once it has applied at least as much, waiting up to \`READ_POSITION_WAIT_MS\` (1 s by default), else 503 with \`Retry-After\`; never an older answer. Without it, a replica answers from what it has, which may be older than what another replica answered before. A token this API did not give is answered 400.`,
  schema: { type: 'string' },
});

const retryPosition = (): Record<string, HeaderObject> => ({
  'Retry-After': {
    description: 'Seconds after which to try again (this replica or another).',
    schema: { type: 'string' },
  },
});

/** Sent on every answer, errors included (`observability.ts`, and the 431 written before any request). */
const requestIdHeader = (): Record<string, HeaderObject> => ({
  'X-Request-Id': {
    description:
      'The id of the request in the service’s logs: the caller’s own `X-Request-Id` when it is 1–64 letters, digits, `_`, `.` or `-`, else a new UUID.',
    schema: { type: 'string' },
  },
});

const requestId = (): object => ({
  in: 'header',
  name: 'X-Request-Id',
  required: false,
  description:
    'An id for this request in the service’s logs, echoed on the answer; anything but 1–64 letters, digits, `_`, `.` or `-` is replaced by a new UUID.',
  // no pattern: the server takes any value (and replaces what it does not keep), so a client should too
  schema: { type: 'string' },
});

const wwwAuthenticate = (): Record<string, HeaderObject> => ({
  'WWW-Authenticate': {
    description: 'The scheme to authenticate with: a bearer API key.',
    schema: { type: 'string', const: 'Bearer' },
  },
});

/** Answers given before the key is known (or before the request is read): no budget to state. */
const unbudgeted = new Set(['401', '431', 'default']);

const ifNoneMatch = (): object => ({
  in: 'header',
  name: 'If-None-Match',
  required: false,
  description:
    'An ETag received before (a list of tags and `*` are accepted, compared weakly): when it names the current tag, the answer is 304 with no body.',
  schema: { type: 'string' },
});

/**
 * Per endpoint (its path below the server URL, `API_PREFIX`), its `operationId` (client generators
 * name their methods after it) and the headers of its 200 beyond the validators.
 */
const conditionalEndpoints: Record<
  string,
  { operationId: string; okHeaders: () => Record<string, HeaderObject> }
> = {
  '/orders': { operationId: 'listOrders', okHeaders: linkHeader },
  '/orders/{id}/articles': { operationId: 'listOrderArticles', okHeaders: () => ({}) },
};

/** The named schemas (`schemas/api.ts`), which answers refer to; zod's input copies are not used. */
const componentNames = ['Order', 'OrderList', 'Article', 'ArticleList', 'Error'];

interface OperationObject {
  operationId?: string;
  parameters?: unknown[];
  responses?: Record<string, { headers?: Record<string, HeaderObject> }>;
}

/**
 * Adds the conditional-request, position, paging, compression and rate-limit headers to the generated document. They are documented
 * here rather than in the route schemas because a header schema would be validated on every request.
 */
function withConditionalHeaders(paths: Record<string, { get?: OperationObject } | undefined>): void {
  for (const [path, { operationId, okHeaders }] of Object.entries(conditionalEndpoints)) {
    const operation = paths[path]?.get;
    if (operation === undefined) throw new Error(`OpenAPI: no GET ${path} to document headers on`);
    operation.operationId = operationId;
    operation.parameters = [...(operation.parameters ?? []), ifNoneMatch(), readPosition(), requestId()];
    const ok = operation.responses?.['200'];
    const notModified = operation.responses?.['304'];
    if (ok === undefined || notModified === undefined)
      throw new Error(`OpenAPI: GET ${path} lacks 200 or 304`);
    ok.headers = { ...validatorHeaders(), ...okHeaders(), ...compressionHeaders(), ...positionHeaders() };
    notModified.headers = { ...validatorHeaders(), ...varyHeader(), ...positionHeaders() };
    // every answer after authentication states the key's budget (a 401 has no key to count by)
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      response.headers = { ...response.headers, ...requestIdHeader() };
      if (status === '401') response.headers = { ...response.headers, ...wwwAuthenticate() };
      if (unbudgeted.has(status)) continue;
      response.headers = {
        ...response.headers,
        ...rateLimitHeaders(),
        ...(status === '429' ? retryAfter() : {}),
        ...(status === '503' ? retryPosition() : {}),
        ...(status === '404' ? positionHeaders() : {}),
      };
    }
  }
}

export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'External Orders API',
        version: '1.0.0',
        description: 'Read-only access to the press-release distribution orders of your organization.',
        // The package is private and grants no licence; SPDX names a licence outside its list with
        // a `LicenseRef-` identifier, which is what OpenAPI 3.1's `identifier` takes.
        license: { name: 'Proprietary: no licence is granted', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [{ url: API_PREFIX, description: 'The API, on the host that serves this document' }],
      tags: [{ name: 'Orders', description: 'The orders of your organization and their articles' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'Your API key' } },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      // @fastify/swagger has already written the paths below the server URL (`stripBasePathByServers`)
      const openapi = document.openapiObject as {
        paths?: Record<string, { get?: OperationObject } | undefined>;
        components?: Record<string, unknown>;
      };
      const { components } = jsonSchemaTransformObject(document) as {
        components?: { schemas?: Record<string, unknown> };
      };
      const schemas = components?.schemas ?? {};
      withConditionalHeaders(openapi.paths ?? {});
      openapi.components = {
        ...openapi.components,
        schemas: Object.fromEntries(componentNames.map((name) => [name, schemas[name]])),
      };
      return document.openapiObject;
    },
  });
}

/** `GET /openapi.json` in `scope`, without authentication (about 25 KB: compressed when asked). */
export function openApiRoute(scope: FastifyInstance, app: FastifyInstance): void {
  scope.get('/openapi.json', { schema: { hide: true } }, (_request, reply) => {
    sendJsonText(reply, JSON.stringify(app.swagger()));
  });
}

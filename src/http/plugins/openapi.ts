/** The OpenAPI 3.1 document, generated from the routes' zod schemas (served at `<prefix>/openapi.json`). */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { API_PREFIX } from '../../../schemas/api.js';
import { sendJsonText } from '../serializer.js';
import {
  compressionHeaders,
  ifNoneMatch,
  positionHeaders,
  preferenceApplied,
  preferWait,
  rateLimitHeaders,
  readPosition,
  requestId,
  requestIdHeader,
  retryAfter,
  retryPosition,
  validatorHeaders,
  varyHeader,
  wwwAuthenticate,
  type HeaderObject,
} from './openapi-headers.js';

export type { HeaderObject };

/**
 * What a route declares of itself where it is registered (`config.openApi`): its `operationId`
 * (client generators name their methods after it) and the headers of its 200 beyond those every
 * secured, conditional route sends (validators, position, compression, rate limits, request id).
 */
export interface RouteDocument {
  operationId: string;
  okHeaders: () => Record<string, HeaderObject>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** the route's part of the OpenAPI document; every documented GET declares one */
    openApi?: RouteDocument;
  }
}

/** Answers given before the key is known (or before the request is read): no budget to state. */
const unbudgeted = new Set(['401', '431', 'default']);

/** A route's URL as the document names it: below the server URL (`API_PREFIX`), `{id}` for `:id`. */
function documentPath(url: string): string {
  const path = url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) : url;
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

const schemaRef = '#/components/schemas/';

/**
 * The named schemas (`.meta({ id })`) the paths refer to, and those they refer to in turn, in the
 * provider's order. Nothing else is kept: not the provider's input copies (`<id>Input`), nor a
 * schema named anywhere else in the process.
 */
function referencedSchemas(paths: unknown, schemas: Record<string, unknown>): Record<string, unknown> {
  const names = new Set<string>();
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$ref' && typeof inner === 'string' && inner.startsWith(schemaRef)) {
        const name = inner.slice(schemaRef.length);
        if (!names.has(name)) {
          names.add(name);
          visit(schemas[name]);
        }
      } else visit(inner);
    }
  };
  visit(paths);
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => names.has(name)));
}

interface OperationObject {
  operationId?: string;
  parameters?: unknown[];
  responses?: Record<string, { headers?: Record<string, HeaderObject> }>;
}

/**
 * Adds the conditional-request, position, compression and rate-limit headers, and each route's own
 * (`RouteDocument`, by its path), to the generated document. They are documented here rather than in
 * the route schemas because a header schema would be validated on every request.
 */
function withConditionalHeaders(
  paths: Record<string, { get?: OperationObject } | undefined>,
  routes: ReadonlyMap<string, RouteDocument>,
): void {
  for (const [path, item] of Object.entries(paths)) {
    const operation = item?.get;
    if (operation === undefined) continue;
    const route = routes.get(path);
    if (route === undefined) {
      throw new Error(`OpenAPI: GET ${path} declares no config.openApi where it is registered`);
    }
    const { operationId, okHeaders } = route;
    operation.operationId = operationId;
    operation.parameters = [
      ...(operation.parameters ?? []),
      ifNoneMatch(),
      preferWait(),
      readPosition(),
      requestId(),
    ];
    const ok = operation.responses?.['200'];
    const notModified = operation.responses?.['304'];
    if (ok === undefined || notModified === undefined)
      throw new Error(`OpenAPI: GET ${path} lacks 200 or 304`);
    ok.headers = {
      ...validatorHeaders(),
      ...okHeaders(),
      ...compressionHeaders(),
      ...positionHeaders(),
      ...preferenceApplied(),
    };
    notModified.headers = {
      ...validatorHeaders(),
      ...varyHeader(),
      ...positionHeaders(),
      ...preferenceApplied(),
    };
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
  /** Each GET route's own part of the document, by its path: routes are registered after this. */
  const routes = new Map<string, RouteDocument>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const document = route.config?.openApi;
    if (document !== undefined && methods.includes('GET')) routes.set(documentPath(route.url), document);
  });
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
      withConditionalHeaders(openapi.paths ?? {}, routes);
      openapi.components = {
        ...openapi.components,
        schemas: referencedSchemas(openapi.paths, schemas),
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

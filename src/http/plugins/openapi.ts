/** The OpenAPI 3.1 document, generated from the routes' zod schemas (served at `<prefix>/openapi.json`). */
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

export async function openApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'External Orders API',
        version: '1.0.0',
        description: 'Read-only access to the press-release distribution orders of your organization.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'Your API key' } },
      },
    },
    transform: jsonSchemaTransform,
  });
}

/** `GET /openapi.json` in `scope`, without authentication. */
export function openApiRoute(scope: FastifyInstance, app: FastifyInstance): void {
  scope.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
}

/**
 * The public API's listening: the main thread on HTTP_PORT, then the request threads on the port it
 * got, all of them with SO_REUSEPORT.
 */
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ServiceConfig } from './config.js';
import type { RequestThreads } from './http/threads/request-threads.js';

/**
 * The API on HTTP_PORT: the main thread, then the request threads on the port it got. On a failure
 * the caller closes the app and stops the threads.
 */
export async function listenApi(
  app: FastifyInstance,
  config: ServiceConfig,
  threads: RequestThreads | null,
): Promise<void> {
  // With SO_REUSEPORT another process listening the same way would silently share the port and
  // half the connections: the port must be free first.
  if (threads !== null && config.http.port !== 0) await assertPortFree(config.http.host, config.http.port);
  // reusePort (Node ≥ 22.12) is passed on to net.Server.listen; Fastify's types do not name it
  await app.listen({ host: config.http.host, port: config.http.port, reusePort: threads !== null } as {
    host: string;
    port: number;
  });
  if (threads === null) return;
  await threads.start(listeningPort(app));
}

/** Binds the port without SO_REUSEPORT and lets it go: EADDRINUSE if any process listens on it. */
async function assertPortFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, resolve);
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

function listeningPort(app: FastifyInstance): number {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the API listens on no TCP port');
  return address.port;
}

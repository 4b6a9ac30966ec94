/**
 * What the request threads share: one rate-limit budget per key however the kernel spreads the
 * connections, one /metrics that sums every thread's requests, and a thread that dies is started
 * again while the others answer.
 */
import { request } from 'node:http';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { keyOf } from '../helpers/api.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture } from '../helpers/service.js';

/** GET on a connection of its own, so that the kernel may hand it to any thread; the status. */
function get(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `${API_PREFIX}${path}`,
        agent: false,
        headers: { authorization: `Bearer ${keyOf(1)}`, connection: 'close' },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function portOf(address: ReturnType<import('node:net').Server['address']>): number {
  if (address === null || typeof address === 'string') throw new Error('no TCP port');
  return address.port;
}

describe('request threads (HTTP_WORKERS)', () => {
  it('share one budget per key and one /metrics, and start a thread that died again', async () => {
    const budget = 12;
    const fixture = await serviceFixture({
      orders: 20,
      env: { HTTP_WORKERS: '3', RATE_LIMIT_MAX: String(budget), RATE_LIMIT_WINDOW_MS: '600000' },
    });
    const service = await fixture.start();
    const port = portOf(service.app.server.address());
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    const metrics = async (): Promise<string> => (await fetch(fixture.adminUrl(service, '/metrics'))).text();
    const sample = (text: string, name: string): number =>
      [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'gm'))].reduce(
        (sum, match) => sum + Number(match[1]),
        0,
      );
    expect(sample(await metrics(), 'orders_read_model_http_threads')).toBe(3);

    const statuses: number[] = [];
    for (let i = 0; i < 2 * budget; i++) statuses.push(await get(port, '/orders?limit=1'));
    expect({
      ok: statuses.filter((s) => s === 200).length,
      limited: statuses.filter((s) => s === 429).length,
    }).toEqual({ ok: budget, limited: budget });
    expect(sample(await metrics(), 'orders_read_model_http_request_duration_seconds_count')).toBe(2 * budget);

    const threads = service.requestThreads;
    if (threads === null) throw new Error('no request threads');
    await threads.terminate(1);
    // The others answer meanwhile (the budget is spent: 429 is the answer).
    for (let i = 0; i < 6; i++) expect(await get(port, '/orders?limit=1')).toBe(429);
    await waitUntil(
      'the thread is started again',
      async () => {
        const text = await metrics();
        return (
          sample(text, 'orders_read_model_http_thread_restarts_total') === 1 &&
          sample(text, 'orders_read_model_http_threads') === 3
        );
      },
      20_000,
    );
    for (let i = 0; i < 6; i++) expect(await get(port, '/orders?limit=1')).toBe(429);
    // The ended thread's requests stay in the sum: a count that fell would be a reset to Prometheus.
    expect(sample(await metrics(), 'orders_read_model_http_request_duration_seconds_count')).toBe(
      2 * budget + 12,
    );
  });

  it('refuses to start when another process listens on HTTP_PORT, rather than share it through SO_REUSEPORT', async () => {
    const other = createServer();
    await new Promise<void>((resolve) =>
      other.listen(
        { host: '127.0.0.1', port: 0, reusePort: true } as { host: string; port: number },
        resolve,
      ),
    );
    const taken = portOf(other.address());
    const fixture = await serviceFixture({
      orders: 1,
      env: { HTTP_WORKERS: '2', HTTP_HOST: '127.0.0.1', HTTP_PORT: String(taken) },
    });
    await expect(fixture.start()).rejects.toThrow(/EADDRINUSE/);
    await new Promise<void>((resolve) => other.close(() => resolve()));
  });
});

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

/**
 * A held GET (`If-None-Match` with the page's tag, `Prefer: wait=N`) on a connection of its own:
 * whether the service held it (`Preference-Applied`), or `gone` when its connection was cut.
 */
function waitingGet(port: number, tag: string, seconds: number): Promise<'held' | 'refused' | 'gone'> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `${API_PREFIX}/orders?limit=1`,
        agent: false,
        headers: {
          authorization: `Bearer ${keyOf(1)}`,
          connection: 'close',
          'if-none-match': tag,
          prefer: `wait=${seconds}`,
        },
      },
      (response) => {
        response.resume();
        const applied = response.headers['preference-applied'] !== undefined;
        response.on('end', () => resolve(applied ? 'held' : 'refused'));
        response.on('error', () => resolve('gone'));
      },
    );
    req.on('error', () => resolve('gone'));
    req.end();
  });
}

/** The sum of a metric's samples in a Prometheus text. */
function sample(text: string, name: string): number {
  return [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'gm'))].reduce(
    (sum, match) => sum + Number(match[1]),
    0,
  );
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

  it('gives back the places of a thread that died holding requests, once it has ended', async () => {
    const total = 16;
    const fixture = await serviceFixture({
      orders: 5,
      env: { HTTP_WORKERS: '2', WAIT_MAX_REQUESTS: String(total), WAIT_MAX_PER_KEY: String(total) },
    });
    const service = await fixture.start();
    const port = portOf(service.app.server.address());
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    const tag = (
      await fetch(`http://127.0.0.1:${port}${API_PREFIX}/orders?limit=1`, {
        headers: { authorization: `Bearer ${keyOf(1)}` },
      })
    ).headers.get('etag');
    if (tag === null) throw new Error('no tag');
    const metrics = async (): Promise<string> => (await fetch(fixture.adminUrl(service, '/metrics'))).text();
    // Held on either thread, as the kernel spreads the connections: every place taken.
    const outcomes: string[] = Array.from({ length: total }, () => 'pending');
    const first = Array.from({ length: total }, (_, i) =>
      waitingGet(port, tag, 60).then((outcome) => (outcomes[i] = outcome)),
    );
    const held = async (): Promise<number> =>
      sample(await metrics(), 'orders_read_model_http_waiting_requests');
    await waitUntil('every place is taken', async () => (await held()) === total, 20_000);
    expect(await waitingGet(port, tag, 60)).toBe('refused');
    expect(outcomes.every((outcome) => outcome === 'pending')).toBe(true);
    const threads = service.requestThreads;
    if (threads === null) throw new Error('no request threads');
    await threads.terminate(1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // The ended thread's requests are cut; the main thread's are still held.
    const cut = outcomes.filter((outcome) => outcome === 'gone').length;
    expect(cut + outcomes.filter((outcome) => outcome === 'pending').length).toBe(total);
    // all 16 connections on the main thread: one chance in 65 536
    expect(cut).toBeGreaterThan(0);
    await waitUntil(
      'the thread is started again',
      async () => sample(await metrics(), 'orders_read_model_http_threads') === 2,
      20_000,
    );
    expect(await held()).toBe(total - cut);
    // Exactly as many places as the ended thread held are free again, on whichever thread. One at
    // a time: two threads taking the last place at the same instant may both refuse it.
    const again: Promise<string>[] = [];
    for (let i = 0; i <= cut; i++) {
      again.push(waitingGet(port, tag, 3));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await Promise.all(again)).filter((outcome) => outcome === 'held').length).toBe(cut);
    await service.close();
    await Promise.all(first);
    expect(outcomes.filter((outcome) => outcome === 'held').length).toBe(total - cut);
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

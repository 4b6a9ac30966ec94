/**
 * Mixed API load while the service ingests. LOAD_MS sets the duration
 * (npm run test:load:long: 60 s). Errors are 5xx, network errors and any
 * status the requests cannot legitimately get (401, 422); a 404 for the
 * articles of an order that is not listed (yet) is a correct answer.
 */
import { describe, expect, it } from 'vitest';
import { keyOf } from '../helpers/api.js';
import { waitUntil } from '../helpers/kafka.js';
import { runLoad } from '../helpers/load.js';
import { serviceFixture } from '../helpers/service.js';

const durationMs = Number(process.env['LOAD_MS'] ?? 5000);

describe('load', () => {
  it(`serves mixed requests for ${durationMs / 1000} s while ingesting, with zero errors`, async () => {
    const fixture = await serviceFixture({ orders: 20_000 });
    const service = await fixture.start();
    const auth = { authorization: `Bearer ${keyOf(1)}` };
    await waitUntil(
      'the key is applied',
      async () => (await fetch(fixture.apiUrl(service, '/orders'), { headers: auth })).status === 200,
      60_000,
      20,
    );
    const lagAtStart = service.health().totalLag;
    const statuses = ['all', 'finished', 'processing'];
    const report = await runLoad({
      durationMs,
      concurrency: 8,
      next: (i) =>
        i % 4 === 3
          ? { url: fixture.apiUrl(service, `/orders/${1 + ((i * 7919) % 20_000)}/articles`), headers: auth }
          : {
              url: fixture.apiUrl(
                service,
                `/orders?status=${statuses[i % 3]!}&limit=${1 + (i % 200)}&offset=${(i * 31) % 3000}`,
              ),
              headers: auth,
            },
    });
    const lagAtEnd = service.health().totalLag;
    console.log(
      `[load] ${report.requests} requests in ${durationMs} ms (${Math.round(report.requests / (durationMs / 1000))}/s) while ingesting (lag ${lagAtStart} → ${lagAtEnd}): ` +
        `${JSON.stringify(report.statuses)}, p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms`,
    );
    expect(Object.keys(report.statuses).filter((s) => s !== '200' && s !== '404')).toEqual([]);
    expect(report.requests).toBeGreaterThan(0);
  });
});

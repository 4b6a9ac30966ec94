/**
 * Mixed API load while the service ingests: the demo data first, then status
 * changes produced throughout the load. LOAD_MS sets the duration
 * (npm run test:load:long: 60 s). On a slow machine the load goes on past it,
 * up to a minute, until the projector has committed a batch beside the
 * requests, so the test always serves while ingesting. Errors are 5xx,
 * network errors and any status the requests cannot legitimately get (401,
 * 422); a 404 for the articles of an order that is not listed (yet) is a
 * correct answer.
 */
import { describe, expect, it } from 'vitest';
import { appliedMessages } from '../../tools/model-progress.js';
import { keyOf } from '../helpers/api.js';
import { at, statusChanged } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { runLoad } from '../../tools/load.js';
import { serviceFixture } from '../helpers/service.js';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

const orders = 20_000;

const durationMs = Number(process.env['LOAD_MS'] ?? 5000);
/** The longest the load goes on waiting for the projector's first batch beside it. */
const longestMs = Math.max(durationMs, 60_000);

describe('load', () => {
  it(`serves mixed requests for ${durationMs / 1000} s while ingesting, with zero errors`, async () => {
    const fixture = await serviceFixture({ orders });
    const service = await fixture.start();
    const auth = { authorization: `Bearer ${keyOf(1)}` };
    await waitUntil(
      'the key is applied',
      async () => (await fetch(fixture.apiUrl(service, '/orders'), { headers: auth })).status === 200,
      60_000,
      20,
    );
    const appliedAtStart = appliedMessages(fixture.dataDir);
    // Keeps the projector busy for the whole load: 1 000 status changes every quarter second, each later than the last.
    const feeding = new AbortController();
    let produced = 0;
    const feeder = (async () => {
      while (!feeding.signal.aborted) {
        const batch = Array.from({ length: 1000 }, (_, i) =>
          statusChanged(1 + ((produced + i) % orders), i % 2 === 0 ? 'finished' : 'publishing', {
            occurred_at: at(10_000_000 + produced + i),
          }),
        );
        await fixture.publish(batch);
        produced += batch.length;
        // The producer shares this process's event loop with the service's HTTP server; a pause leaves it the loop.
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const statuses = ORDER_STATUS_FILTERS;
    const started = Date.now();
    const loadDone = new AbortController();
    // Resolves once the load has lasted durationMs and a batch was applied beside it, or when the load ends.
    const ingestedBeside = waitUntil(
      'the load has lasted long enough',
      () =>
        loadDone.signal.aborted ||
        (Date.now() - started >= durationMs && appliedMessages(fixture.dataDir) > appliedAtStart),
      longestMs + 60_000,
      100,
    );
    const report = await runLoad({
      durationMs: longestMs,
      until: ingestedBeside,
      concurrency: 8,
      next: (i) =>
        i % 4 === 3
          ? { url: fixture.apiUrl(service, `/orders/${1 + ((i * 7919) % orders)}/articles`), headers: auth }
          : {
              url: fixture.apiUrl(
                service,
                `/orders?status=${statuses[i % statuses.length]!}&limit=${1 + (i % 200)}&offset=${(i * 31) % 3000}`,
              ),
              headers: auth,
            },
    }).finally(() => {
      feeding.abort();
      loadDone.abort();
    });
    const elapsedMs = Date.now() - started;
    const appliedDuringLoad = appliedMessages(fixture.dataDir) - appliedAtStart;
    await feeder;
    await ingestedBeside;
    console.log(
      `[load] ${report.requests} requests in ${elapsedMs} ms (${Math.round(report.requests / (elapsedMs / 1000))}/s) while ${appliedDuringLoad} messages were applied (${produced} status changes produced meanwhile): ` +
        `${JSON.stringify(report.statuses)}, p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms, max ${report.maxMs} ms`,
    );
    expect(Object.keys(report.statuses).filter((s) => s !== '200' && s !== '404')).toEqual([]);
    expect(report.requests).toBeGreaterThan(0);
    expect(appliedDuringLoad).toBeGreaterThan(0);
  });
});

/**
 * A projection version change: the service serves the old file while it rebuilds in a worker
 * thread that gives way to requests. Every request is answered from the old file until the switch,
 * and a revocation is honoured within 5 s all the same. The p99 printed here shares the test's own
 * event loop with its HTTP client and with the other test files; the latency figure is
 * `npm run bench:version-candidate`'s (a service process on its own, bench/README.md).
 */
import { describe, expect, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { runLoad, type LoadReport } from '../../tools/load.js';
import { serviceFixture } from '../helpers/service.js';
import { markPreviousProjectionVersion } from '../../tools/model-progress.js';

const loadMs = Number(process.env['VERSION_REBUILD_LOAD_MS'] ?? 3000);

describe('version candidate', () => {
  it('answers every request from the old file during the rebuild and honours a revocation within 5 s', async () => {
    const fixture = await serviceFixture({ orders: 20_000 });
    await fixture.publish([issueKeyOf(2)]);
    const first = await fixture.start();
    await waitUntil('caught up', () => first.health().ready, 120_000);
    const load = (service: typeof first, until?: Promise<unknown>): Promise<LoadReport> =>
      runLoad({
        durationMs: loadMs,
        concurrency: 2,
        ...(until === undefined ? {} : { until }),
        next: (i) => ({
          url: fixture.apiUrl(service, `/orders?limit=50&offset=${(i * 37) % 900}`),
          headers: { authorization: `Bearer ${keyOf(1)}` },
        }),
      });
    const idle = await load(first);
    await first.close();

    const oldFile = new ModelFiles(fixture.dataDir).currentFile()!;
    markPreviousProjectionVersion(oldFile);

    const service = await fixture.start();
    expect(service.health()).toMatchObject({ state: 'catching_up_candidate', ready: false });
    expect(service.health().candidate).not.toBeNull();
    let rebuilt: () => void = () => undefined;
    const switched = new Promise<void>((resolve) => (rebuilt = resolve));
    void waitUntil('switched', () => service.health().file !== oldFile, 120_000, 20).then(() => rebuilt());
    const during = load(service, switched);

    const key2 = { authorization: `Bearer ${keyOf(2)}` };
    expect((await fetch(fixture.apiUrl(service, '/orders'), { headers: key2 })).status).toBe(200);
    await fixture.publish([apiKeyRevoked('test-api-key-of-org-2', { occurred_at: at(1_000_000) })]);
    const revokedAt = Date.now();
    await waitUntil(
      'the revocation is honoured',
      async () => (await fetch(fixture.apiUrl(service, '/orders'), { headers: key2 })).status === 401,
      10_000,
      20,
    );
    const honouredMs = Date.now() - revokedAt;
    const stillOld = service.health().file === oldFile;
    const report = await during;
    console.log(
      `[version candidate] idle: ${idle.requests} requests, p50 ${idle.p50Ms} ms, p99 ${idle.p99Ms} ms; during the rebuild: ${report.requests} requests, p50 ${report.p50Ms} ms, p99 ${report.p99Ms} ms (ratio ${(report.p99Ms / idle.p99Ms).toFixed(2)}, in-process with the test's client: the latency figure is bench:version-candidate's); revocation honoured in ${honouredMs} ms ${stillOld ? 'while the old file was served' : 'after the switch'}`,
    );
    expect(Object.keys(report.statuses)).toEqual(['200']);
    expect(stillOld).toBe(true);
    expect(honouredMs).toBeLessThan(5000);
    await waitUntil('ready on the rebuilt file', () => service.health().ready, 120_000);
  });
});

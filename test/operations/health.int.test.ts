import { renameSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { streamRoles } from '../../schemas/streams.js';
import { removeModelFile } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { keyOf } from '../helpers/api.js';
import { previousVersionFileFrom } from '../../tools/model-progress.js';
import { at, statusChanged } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture } from '../helpers/service.js';

const auth = { authorization: `Bearer ${keyOf(1)}` };

describe('readiness, metrics and the stall watchdog', () => {
  it('goes unready while the consumer is stalled and lagging beyond the threshold, restarts it, and is ready again after catch-up', async () => {
    const fixture = await serviceFixture({
      orders: 500,
      env: { READY_MAX_LAG: '50', STALL_TIMEOUT_MS: '3000', LAG_CHECK_INTERVAL_MS: '200' },
    });
    const service = await fixture.start();
    const readyz = async (): Promise<{ status: number; body: { ready: boolean; reasons: string[] } }> => {
      const response = await fetch(fixture.adminUrl(service, '/readyz'));
      return {
        status: response.status,
        body: (await response.json()) as { ready: boolean; reasons: string[] },
      };
    };
    await waitUntil('ready after the first catch-up', async () => (await readyz()).status === 200, 60_000);
    expect(await (await fetch(fixture.adminUrl(service, '/healthz'))).json()).toEqual({
      status: 'alive',
    });

    // Stall the consumer, then publish more than the lag threshold.
    const projector = service.projector()!;
    projector.pause();
    await fixture.publish(
      Array.from({ length: 300 }, (_, i) =>
        statusChanged(1 + (i % 500), 'finished', { occurred_at: at(1_000_000 + i) }),
      ),
    );
    await waitUntil('unready while lagging', async () => (await readyz()).status === 503, 20_000, 50);
    const unready = await readyz();
    expect(unready.body.ready).toBe(false);
    expect(unready.body.reasons.join('; ')).toMatch(/lag \d+ exceeds 50/);

    const metrics = await (await fetch(fixture.adminUrl(service, '/metrics'))).text();
    const lagSeries = metrics
      .split('\n')
      .filter((line) => line.startsWith('orders_read_model_partition_lag{'));
    // one series per partition of every stream's topic (three each: `createContractTopicSet`)
    expect(lagSeries).toHaveLength(streamRoles.length * 3);
    expect(lagSeries.some((line) => !line.endsWith(' 0'))).toBe(true);

    // The watchdog restarts the stalled consumer; the new one catches up.
    await waitUntil(
      'ready again after the watchdog restart',
      async () => (await readyz()).status === 200,
      60_000,
    );
    expect(service.projector()).not.toBe(projector);
    expect((await fetch(fixture.apiUrl(service, '/orders'), { headers: auth })).status).toBe(200);
    const after = await (await fetch(fixture.adminUrl(service, '/metrics'))).text();
    expect(after).toMatch(
      /^orders_read_model_consumer_restarts_total\{projector="served",reason="stalled"\} 1$/m,
    );
    expect(after).toMatch(/^orders_read_model_events_applied_total\{type="order.status_changed"\} \d+/m);
    expect(after).toMatch(
      /^orders_read_model_http_request_duration_seconds_count\{.*route="\/api\/external-api\/v1\/orders",status_code="200"\} 1$/m,
    );
    expect(after).toMatch(/^orders_read_model_sqlite_file_bytes \d+/m);
    console.log(
      `[health] unready reasons: ${unready.body.reasons.join('; ')}; ${lagSeries.length} lag series`,
    );
  });
});

describe('projection version change', () => {
  it('serves the old version’s file until the new one has caught up, then the new one', async () => {
    const fixture = await serviceFixture({ orders: 3000 });
    const first = await fixture.start();
    await waitUntil('version N has caught up', () => first.health().ready, 60_000);
    await first.close();
    // Put in its place a file of the previous projection version, created from that version's
    // checked-in schema, with data that differs from a fresh projection.
    const oldFile = new ModelFiles(fixture.dataDir).currentFile()!;
    const previous = `${oldFile}.v3`;
    previousVersionFileFrom(oldFile, previous, { org: { 1: 1 } });
    removeModelFile(oldFile);
    renameSync(previous, oldFile);
    const db = new Database(oldFile);
    db.exec(`UPDATE orders SET title = 'projected by version 3'`);
    db.close();

    const service = await fixture.start();
    const titles: string[] = [];
    const readiness: boolean[] = [];
    await waitUntil(
      'answers come from the new version',
      async () => {
        const response = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers: auth });
        expect(response.status).toBe(200);
        const body = (await response.json()) as { data: { press_release_title: string }[] };
        titles.push(body.data[0]!.press_release_title);
        readiness.push(service.health().ready);
        return titles.at(-1) !== 'projected by version 3';
      },
      60_000,
      20,
    );
    const firstNew = titles.findIndex((t) => t !== 'projected by version 3');
    console.log(`[version change] ${firstNew} answers from the version-3 file, then the rebuilt one`);
    expect(firstNew).toBeGreaterThan(0);
    expect(readiness.slice(0, firstNew).every((r) => !r)).toBe(true);
    expect(service.health().file).not.toBe(oldFile);
    await waitUntil('ready on the new file', () => service.health().ready, 30_000);
  });
});

import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { serviceArgv } from '../../tools/harness.js';
import { describe, expect, it } from 'vitest';
import { appliedMessagesIn } from '../../tools/model-progress.js';
import { openBuildFile } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated, orderDeleted } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { dumpModel } from '../helpers/read-model.js';
import { serviceFixture } from '../helpers/service.js';

const auth = { authorization: `Bearer ${keyOf(1)}` };

/** Runs the CLI (`npm run cli -- …`) as its own process, as an operator would. */
function cli(env: NodeJS.ProcessEnv, args: string[]) {
  const child = spawn(process.execPath, serviceArgv(args), {
    env: { ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, exited, output: () => output };
}

/** Simulates a model damaged by a bug: every title in the live file is overwritten. */
function damageLiveModel(dataDir: string): void {
  const db = new Database(new ModelFiles(dataDir).currentFile()!);
  db.prepare(`UPDATE orders SET title = 'stale copy'`).run();
  db.close();
}

describe('rebuild by replay', () => {
  it('swaps to the rebuilt file under continuous requests with zero non-2xx answers, serving the new file after the swap', async () => {
    const fixture = await serviceFixture({ orders: 3000 });
    const service = await fixture.start();
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    const oldFile = new ModelFiles(fixture.dataDir).currentFile()!;
    damageLiveModel(fixture.dataDir);

    const statuses = new Map<number, number>();
    const sources: ('old' | 'new')[] = [];
    const load = { running: true };
    const requests = (async () => {
      while (load.running) {
        const response = await fetch(fixture.apiUrl(service, '/orders?limit=5'), { headers: auth });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const body = (await response.json()) as { data?: { press_release_title: string }[] };
        if (body.data !== undefined && body.data.length > 0) {
          sources.push(body.data.every((o) => o.press_release_title === 'stale copy') ? 'old' : 'new');
        }
      }
    })();

    const rebuild = cli(fixture.env, ['rebuild']);
    expect(await rebuild.exited, rebuild.output()).toBe(0);
    await waitUntil('answers come from the rebuilt file', () => sources.at(-1) === 'new', 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    load.running = false;
    await requests;

    const firstNew = sources.indexOf('new');
    console.log(
      `[rebuild swap] ${sources.length} answers: statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${firstNew} from the old file, then ${sources.length - firstNew} from the new one`,
    );
    expect([...statuses.keys()]).toEqual([200]);
    expect(firstNew).toBeGreaterThan(0);
    expect(sources.slice(firstNew).every((s) => s === 'new')).toBe(true);
    expect(rebuild.output()).toMatch(/Rebuilt \d+ messages/);
    await waitUntil('the old file is removed', () => !existsSync(oldFile), 30_000);
    expect(service.health().file).not.toBe(oldFile);
  });

  it('leaves the live model serving and unchanged when the rebuild process is killed', async () => {
    const fixture = await serviceFixture({ orders: 12_000 });
    const service = await fixture.start();
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    const files = new ModelFiles(fixture.dataDir);
    const liveFile = files.currentFile()!;
    const pointer = readFileSync(files.pointerPath, 'utf8');
    const snapshot = (): unknown => {
      const db = new Database(liveFile, { readonly: true });
      try {
        return dumpModel(db);
      } finally {
        db.close();
      }
    };
    const before = snapshot();

    // What a build file holds before it gets any event: growing past it means events are written.
    // The size is read without a lock: the rebuild's writer holds the file's lock for most of its
    // run, and a reader of its stored offsets could wait out the whole (short) rebuild.
    const emptyBuild = openBuildFile(join(fixture.dataDir, '..', 'empty.building'));
    emptyBuild.db.close();
    const emptySize = statSync(join(fixture.dataDir, '..', 'empty.building')).size;
    const rebuild = cli(fixture.env, ['rebuild']);
    // The rebuild's file, and once its articles thread has started, that thread's.
    const buildBytes = (): number =>
      Math.max(0, ...files.abandonedBuilds().map((file) => (existsSync(file) ? statSync(file).size : 0)));
    await waitUntil('the rebuild has written events', () => buildBytes() > emptySize, 60_000, 5);
    rebuild.child.kill('SIGKILL');
    await rebuild.exited;
    const appliedAtKill = files
      .abandonedBuilds()
      .reduce((sum, building) => sum + appliedMessagesIn(building), 0);

    const response = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers: auth });
    console.log(
      `[rebuild kill] killed at ${buildBytes()} bytes (${emptySize} empty), ${appliedAtKill} messages readable; live answer ${response.status}`,
    );
    expect(response.status).toBe(200);
    expect(readFileSync(files.pointerPath, 'utf8')).toBe(pointer);
    expect(service.health().file).toBe(liveFile);
    expect(snapshot()).toEqual(before);
    expect(files.abandonedBuilds().length).toBeGreaterThanOrEqual(1);
    expect(files.abandonedBuilds().length).toBeLessThanOrEqual(2);

    const status = cli(fixture.env, ['status']);
    expect(await status.exited).toBe(0);
    expect(status.output()).toContain('.building');
  });

  it('never answers from an older model across a rebuild under continuous writes, deletions and a revocation', async () => {
    const fixture = await serviceFixture({ orders: 6000 });
    await fixture.publish([issueKeyOf(2), issueKeyOf(3)]);
    const service = await fixture.start();
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    const oldFile = service.health().file;
    const bearer = (org: number): Record<string, string> => ({ authorization: `Bearer ${keyOf(org)}` });

    // Upstream keeps writing: new orders of organization 1, and orders of organization 3 created then deleted.
    const writes = { running: true, nextId: 1_000_000, minute: 100_000 };
    const deleted: number[] = [];
    const writer = (async () => {
      while (writes.running) {
        const id = (writes.nextId += 1);
        const created = orderCreated(
          { order_id: id, organization_id: id % 2 === 0 ? 1 : 3 },
          { occurred_at: at((writes.minute += 1)) },
        );
        await fixture.publish([created]);
        if (id % 2 === 1) {
          await fixture.publish([orderDeleted(id, { occurred_at: at((writes.minute += 1)) })]);
          deleted.push(id);
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();

    const totals: number[] = [];
    const deletedSeen = new Map<number, number[]>();
    const revokedKey: number[] = [];
    const reads = { running: true };
    const reader = (async () => {
      while (reads.running) {
        const list = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers: bearer(1) });
        totals.push(((await list.json()) as { total: number }).total);
        const gone = deleted.at(-1);
        if (gone !== undefined) {
          const articles = await fetch(fixture.apiUrl(service, `/orders/${gone}/articles`), {
            headers: bearer(3),
          });
          await articles.arrayBuffer();
          deletedSeen.set(gone, [...(deletedSeen.get(gone) ?? []), articles.status]);
        }
        const other = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers: bearer(2) });
        await other.arrayBuffer();
        revokedKey.push(other.status);
      }
    })();

    const rebuild = cli(fixture.env, ['rebuild']);
    await waitUntil(
      'the rebuild is under way',
      () => new ModelFiles(fixture.dataDir).abandonedBuilds().length > 0,
      30_000,
      20,
    );
    await fixture.publish([
      apiKeyRevoked('test-api-key-of-org-2', { occurred_at: at((writes.minute += 1)) }),
    ]);
    expect(await rebuild.exited, rebuild.output()).toBe(0);
    await waitUntil('the rebuilt model is served', () => service.health().file !== oldFile, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    writes.running = false;
    reads.running = false;
    await Promise.all([writer, reader]);

    const firstRefusal = revokedKey.indexOf(401);
    // Listed (200), then gone (404), then listed again: an older model answered. A 404 before the
    // first 200 only means the creation had not been applied yet.
    const reappeared = [...deletedSeen].filter(([, statuses]) => {
      const gone = statuses.indexOf(404, statuses.indexOf(200));
      return statuses.includes(200) && gone > 0 && statuses.lastIndexOf(200) > gone;
    });
    console.log(
      `[rebuild monotonic] ${totals.length} rounds; total of organization 1 from ${totals[0]} to ${totals.at(-1)}; ${deleted.length} orders deleted; revoked key refused from round ${firstRefusal}`,
    );
    expect(totals.every((total, i) => i === 0 || total >= totals[i - 1]!)).toBe(true);
    expect(totals.at(-1)!).toBeGreaterThan(totals[0]!);
    expect(reappeared).toEqual([]);
    expect(firstRefusal).toBeGreaterThan(0);
    expect(revokedKey.slice(firstRefusal).every((status) => status === 401)).toBe(true);
    expect(existsSync(oldFile)).toBe(false);
  });

  it('refuses a second rebuild of the same data directory while one runs, and keeps a --no-promote result', async () => {
    const fixture = await serviceFixture({ orders: 12_000 });
    const first = cli(fixture.env, ['rebuild', '--no-promote']);
    const files = new ModelFiles(fixture.dataDir);
    await waitUntil('the first rebuild holds the lock', () => existsSync(files.lockPath), 30_000, 20);
    const second = cli(fixture.env, ['rebuild']);
    expect(await second.exited).toBe(1);
    expect(second.output()).toMatch(/Another rebuild of .* is running \(rebuild, pid \d+/);
    expect(await first.exited, first.output()).toBe(0);
    const kept = /into (\S+\.sqlite);/.exec(first.output())?.[1];
    expect(kept).toBeDefined();
    expect(files.nextFile()).toBeNull();

    const service = await fixture.start();
    await waitUntil('the service is ready', () => service.health().ready, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(existsSync(kept!)).toBe(true);
  });
});

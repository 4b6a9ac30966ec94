import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { appliedMessagesIn } from '../../scripts/model-progress.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { keyOf } from '../helpers/api.js';
import { waitUntil } from '../helpers/kafka.js';
import { dumpModel } from '../helpers/read-model.js';
import { serviceFixture } from '../helpers/service.js';

const auth = { authorization: `Bearer ${keyOf(1)}` };

/** Runs the CLI (`npm run cli -- …`) as its own process, as an operator would. */
function cli(env: NodeJS.ProcessEnv, args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', ...args], {
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

    const rebuild = cli(fixture.env, ['rebuild']);
    const buildProgress = (): number => {
      const building = files.abandonedBuilds()[0];
      return building === undefined ? 0 : appliedMessagesIn(building);
    };
    await waitUntil('the rebuild has applied some messages', () => buildProgress() > 0, 60_000, 5);
    rebuild.child.kill('SIGKILL');
    await rebuild.exited;
    const appliedAtKill = buildProgress();

    const response = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers: auth });
    console.log(`[rebuild kill] killed after ${appliedAtKill} messages; live answer ${response.status}`);
    expect(response.status).toBe(200);
    expect(readFileSync(files.pointerPath, 'utf8')).toBe(pointer);
    expect(service.health().file).toBe(liveFile);
    expect(snapshot()).toEqual(before);
    expect(files.abandonedBuilds()).toHaveLength(1);

    const status = cli(fixture.env, ['status']);
    expect(await status.exited).toBe(0);
    expect(status.output()).toContain('.building');
  });
});

/**
 * Adding a replica from a snapshot: taken from the running service while it ingests, restored into
 * a new replica's data directory, which continues from the snapshot's positions and ends equal to
 * the live model.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { serviceArgv } from '../../tools/harness.js';
import { describe, expect, it } from 'vitest';
import { appliedMessagesIn, markPreviousProjectionVersion } from '../../tools/model-progress.js';
import { loadConfig } from '../../src/config.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { startService } from '../../src/service.js';
import { at, statusChanged } from '../helpers/events.js';
import { uniqueTopicName, waitUntil } from '../helpers/kafka.js';
import { dumpModel } from '../helpers/read-model.js';
import { serviceFixture } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

function cli(env: NodeJS.ProcessEnv, args: string[]): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, serviceArgv(args), {
    env: { ...env, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('snapshots for new replicas', () => {
  const dir = tempDir('snapshot');

  it('a replica restored from a snapshot taken under ingestion continues from its positions and ends equal to the live model', async () => {
    const fixture = await serviceFixture({ orders: 3000 });
    const live = await fixture.start();
    await waitUntil('ready', () => live.health().ready, 60_000);

    const writes = { running: true, n: 0 };
    const writer = (async () => {
      while (writes.running) {
        writes.n += 1;
        await fixture.publish([
          statusChanged(1 + (writes.n % 3000), writes.n % 2 === 0 ? 'finished' : 'publishing', {
            occurred_at: at(100_000 + writes.n),
          }),
        ]);
      }
    })();
    await waitUntil('ingesting', () => writes.n > 50, 30_000, 10);
    const snapshot = join(dir, 'model.sqlite');
    const taken = cli(fixture.env, ['snapshot', '--to', snapshot]);
    expect(taken.status, taken.output).toBe(0);
    expect(taken.output).toMatch(
      /Wrote .*model\.sqlite \(\d+ bytes, projection version \d+, \d+ messages applied\)/,
    );
    await waitUntil('more writes after the snapshot', () => writes.n > 300, 30_000, 10);
    writes.running = false;
    await writer;

    const replicaDir = join(dir, 'replica');
    const replicaEnv = { ...fixture.env, DATA_DIR: replicaDir, KAFKA_GROUP_ID: uniqueTopicName('replica') };
    const restored = cli(replicaEnv, ['snapshot', '--restore', snapshot]);
    expect(restored.status, restored.output).toBe(0);
    const fromSnapshot = appliedMessagesIn(new ModelFiles(replicaDir).currentFile()!);
    expect(fromSnapshot).toBeGreaterThan(0);

    const replica = await startService(loadConfig(replicaEnv), pino({ level: 'silent' }));
    try {
      await waitUntil('the replica is ready', () => replica.health().ready, 60_000);
      await waitUntil('the live model is caught up', () => live.health().totalLag === 0, 60_000);
      await waitUntil('the replica is caught up', () => replica.health().totalLag === 0, 60_000);
      const metrics = (await replica.admin.inject('/metrics')).body;
      const applied = metrics
        .split('\n')
        .filter((line) => line.startsWith('orders_read_model_events_applied_total{'))
        // The keys store is not in a snapshot: a restored replica builds it from the keys topic.
        .filter((line) => !line.includes('type="api_key.'))
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
      // It applied only what came after the snapshot, not the whole log again.
      expect(applied).toBeLessThan(
        appliedMessagesIn(new ModelFiles(fixture.dataDir).currentFile()!) - fromSnapshot + 1,
      );
      expect(applied).toBeGreaterThan(0);
      const a = new Database(new ModelFiles(fixture.dataDir).currentFile()!, { readonly: true });
      const b = new Database(new ModelFiles(replicaDir).currentFile()!, { readonly: true });
      expect(dumpModel(b)).toEqual(dumpModel(a));
      a.close();
      b.close();
    } finally {
      await replica.close();
    }
  });

  it('refuses a snapshot of another projection version, and a data directory that serves a model already', () => {
    const other = join(dir, 'other-version.sqlite');
    const source = join(dir, 'model.sqlite');
    const db = new Database(source, { readonly: true });
    db.prepare('VACUUM INTO ?').run(other);
    db.close();
    markPreviousProjectionVersion(other);
    const env = { PATH: process.env['PATH'], DATA_DIR: join(dir, 'fresh') };
    const refused = cli(env, ['snapshot', '--restore', other]);
    expect(refused.status).toBe(2);
    expect(refused.output).toMatch(/holds projection version 3; this code projects version \d+/);
    const occupied = cli({ ...env, DATA_DIR: join(dir, 'replica') }, ['snapshot', '--restore', source]);
    expect(occupied.status).toBe(2);
    expect(occupied.output).toMatch(/already serves/);
  });
});

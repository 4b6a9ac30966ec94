/**
 * The keys watch (while the served model is of an older version): its consumer's failures do not
 * cost the keys it has answered from, and it is stopped, its in-memory model let go, when not needed.
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keysWatchFile, leftKeysWatchFile } from '../../src/consumer/keys-watch.js';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/http/auth.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { tempDir } from '../helpers/temp.js';
import { markProjectionVersion1 } from '../../tools/model-progress.js';

const root = tempDir('keys-watch');
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

const events = [issueKeyOf(1), orderCreated({ order_id: 1 }, { occurred_at: at(1) })];
const revocation = apiKeyRevoked('test-api-key-of-org-1', { occurred_at: at(10) });

/** A served model of an older projection version that holds key 1 issued, not revoked. */
async function olderServedModel(dataDir: string): Promise<string> {
  const older = lifecycleFixture(dataDir);
  older.publish(events);
  older.lifecycle.start();
  await waitUntil('applied', async () => {
    await older.tick();
    return older.lifecycle.health().totalLag === 0;
  });
  await older.lifecycle.stop();
  const served = older.files.currentFile()!;
  markProjectionVersion1(served);
  return served;
}

const leftFiles = (dir: string): string[] =>
  readdirSync(dir).filter((name) => /^keys-watch-.*\.sqlite$/.test(name));

describe('the keys watch', () => {
  it.each(['killed', 'stopped'] as const)(
    'left by a process %s while it was needed, is resumed by the next start: its revocation counts at once, with the broker away',
    async (how) => {
      const dataDir = join(root, how);
      const served = await olderServedModel(dataDir);
      // The version rebuild's batches wait, and fail once dropped: only the watch applies the revocation.
      let release: () => void = () => undefined;
      let drop: () => void = () => undefined;
      const held = new Promise<void>((resolve, reject) => {
        release = resolve;
        drop = () => reject(new Error('the version rebuild is held back'));
      });
      held.catch(() => undefined);
      const hold = (file: string): Promise<void> | undefined => (file === served ? undefined : held);
      const first = lifecycleFixture(dataDir, { keysWatch: true, beforeBatch: hold });
      const next = lifecycleFixture(dataDir, { keysWatch: true, beforeBatch: hold });
      const key = sha256Hex(keyOf(1));
      try {
        first.publish([...events, revocation]);
        first.lifecycle.start();
        await waitUntil(
          "the first process's watch applied the revocation",
          async () => {
            await first.tick();
            return first.lifecycle.reads.orgOfKeyHash(key) === null;
          },
          3000,
        );
        // Killed: nothing of the first process is stopped; stopped: as on SIGTERM. The broker is gone.
        first.kafka.breakDown();
        if (how === 'stopped') {
          drop();
          await first.lifecycle.stop();
        }
        expect(leftFiles(dataDir), 'the watch file left').toHaveLength(1);
        next.publish([...events, revocation]);
        next.kafka.breakDown();
        next.lifecycle.start();
        // The service listens only after its start's commands have run (building the app awaits).
        await new Promise((resolve) => setImmediate(resolve));
        for (let i = 0; i < 10; i += 1) {
          expect(next.lifecycle.reads.orgOfKeyHash(key), 'the revoked key after the restart').toBeNull();
          await next.tick();
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(next.keysWatches.started).toBe(1);
      } finally {
        release();
        await next.lifecycle.stop();
        await first.lifecycle.stop();
      }
    },
    20_000,
  );

  it('leaves the newest watch file to resume and removes older ones', () => {
    const dir = join(root, 'leftovers');
    mkdirSync(dir, { recursive: true });
    for (const ms of [5, 1000, 30]) writeFileSync(keysWatchFile(dir, ms), '');
    expect(leftKeysWatchFile(dir)).toBe(keysWatchFile(dir, 1000));
    expect(leftFiles(dir)).toEqual(['keys-watch-1000.sqlite']);
    mkdirSync(join(root, 'leftovers-none'), { recursive: true });
    expect(leftKeysWatchFile(join(root, 'leftovers-none'))).toBeNull();
  });

  it('keeps a revocation it applied through its consumer failing and resuming, and is stopped once at the end', async () => {
    const dataDir = join(root, 'data');
    const served = await olderServedModel(dataDir);

    // The version rebuild is held back: only the watch reads the revocation.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const f = lifecycleFixture(dataDir, {
      keysWatch: true,
      beforeBatch: (file) => (file === served ? undefined : held),
    });
    running.push(f);
    f.publish([...events, revocation]);
    f.lifecycle.start();
    const key = sha256Hex(keyOf(1));
    try {
      await waitUntil(
        'the watch applied the revocation',
        () => f.lifecycle.reads.orgOfKeyHash(key) === null,
        3000,
      );
      f.kafka.breakDown();
      for (let i = 0; i < 10; i += 1) {
        await f.tick();
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(f.lifecycle.reads.orgOfKeyHash(key), 'the revoked key while the broker is down').toBeNull();
      }
      f.kafka.recover();
      f.publish([issueKeyOf(2, at(20))]);
      await waitUntil(
        'the watch resumed and applied a new key',
        async () => {
          await f.tick();
          return f.lifecycle.reads.orgOfKeyHash(sha256Hex(keyOf(2))) === 2;
        },
        5000,
      );
      expect(f.lifecycle.reads.orgOfKeyHash(key)).toBeNull();
    } finally {
      release();
    }
    await f.lifecycle.stop();
    running.splice(0);
    expect(f.keysWatches).toEqual({ started: 1, stopped: 1 });
  }, 20_000);
});

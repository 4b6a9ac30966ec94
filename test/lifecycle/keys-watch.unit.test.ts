/** The keys watch (served model of an older version): a failed watch is let go, not only forgotten. */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { issueKeyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
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

describe('the keys watch', () => {
  it('is stopped when it fails (its in-memory model and consumer let go) and started again', async () => {
    const dataDir = join(root, 'data');
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

    // The version rebuild is held back, so that the watch is needed throughout.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const f = lifecycleFixture(dataDir, {
      keysWatch: true,
      beforeBatch: (file) => (file === served ? undefined : held),
    });
    running.push(f);
    f.publish(events);
    f.lifecycle.start();
    await waitUntil('a keys watch runs', () => f.keysWatches.started === 1, 3000);
    f.kafka.breakDown();
    await waitUntil('the failed watch is stopped', () => f.keysWatches.stopped === 1, 3000);
    f.kafka.recover();
    await waitUntil(
      'a new watch runs',
      async () => {
        await f.tick();
        return f.keysWatches.started === 2;
      },
      5000,
    );
    release();
    await f.lifecycle.stop();
    running.splice(0);
    expect(f.keysWatches).toEqual({ started: 2, stopped: 2 });
  }, 20_000);
});

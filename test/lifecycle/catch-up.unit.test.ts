import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import type { CatchUpOptions } from '../../src/lifecycle/catch-up.js';
import type { RebuildProgress } from '../../src/projector/rebuild-progress.js';
import { rebuildModel } from '../../src/projector/rebuild.js';
import type { ReplayThread } from '../../src/projector/replay-thread.js';
import { issueKeyOf } from '../helpers/api.js';
import { at, orderCreated, orderDeleted } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { stuckReplays } from '../helpers/replays.js';
import { dumpModel, memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { openReadModel } from '../../src/read-model/database.js';

const root = tempDir('catch-up');
let n = 0;
const dataDir = (): string => join(root, `data-${(n += 1)}`);
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

const orders = (from: number, count: number): DomainEvent[] =>
  Array.from({ length: count }, (_, i) =>
    orderCreated({ order_id: from + i, organization_id: 1 }, { occurred_at: at(from + i) }),
  );

const live = async (f: LifecycleFixture): Promise<boolean> => {
  await f.tick();
  return f.lifecycle.health().state === 'live';
};

/** The served model's projector, slowed down so that the first lag check finds it far behind. */
const slowly = {
  beforeBatch: (file: string): Promise<void> | void =>
    file.includes('keys') ? undefined : new Promise((resolve) => setTimeout(resolve, 5)),
};

const totalOf = (f: LifecycleFixture): number =>
  f.lifecycle.reads.orderPage({ orgId: 1, status: null, limit: 1, offset: 0 }).total;

/** A replay as the service runs it, in this thread: `rebuildModel` over the fixture's port. */
function inProcessReplays(f: () => LifecycleFixture, started: ReplayThread[]): CatchUpOptions['start'] {
  return (onProgress) => {
    let abort: () => void = () => undefined;
    const aborted = new Promise<void>((resolve) => (abort = resolve));
    let last: RebuildProgress | null = null;
    const done = rebuildModel({
      port: f().kafka,
      topics: testTopics,
      files: f().files,
      groupId: 'test',
      logger: pino({ level: 'silent' }),
      abort: aborted,
      onProgress: (progress) => {
        last = progress;
        onProgress(progress);
      },
    });
    const thread: ReplayThread = {
      done,
      progress: () => last,
      abort: async () => {
        abort();
        await done.catch(() => undefined);
      },
      terminate: () => Promise.resolve(),
    };
    started.push(thread);
    return thread;
  };
}

describe('catching up by replay (in-memory Kafka port)', () => {
  it('replays a far backlog into a new model, serves it once it has reached the served one, then goes on live', async () => {
    const replays: ReplayThread[] = [];
    let f: LifecycleFixture | null = null;
    f = lifecycleFixture(dataDir(), {
      ...slowly,
      catchUp: { minLag: 100, minShare: 0.6, start: inProcessReplays(() => f!, replays) },
    });
    running.push(f);
    f.kafka.batchSize = 5;
    const backlog = [...orders(1, 300), orderDeleted(7, { occurred_at: at(1000) })];
    f.publish([issueKeyOf(1), ...backlog]);
    f.lifecycle.start();
    const first = f.lifecycle.servedFile();
    await waitUntil(
      'switched to the replayed model',
      async () => {
        await f.tick();
        return f.lifecycle.servedFile() !== first;
      },
      10_000,
      5,
    );
    expect(replays).toHaveLength(1);
    expect(f.files.nextFile()).toBeNull();
    expect(f.transitions.every((t) => t.allowed)).toBe(true);
    expect(totalOf(f)).toBe(299);
    // back to batch by batch: new events reach the new model, and no second replay starts
    const later = orders(301, 5);
    f.publish(later);
    await waitUntil(
      'live on the replayed model',
      async () => (await live(f)) && totalOf(f) === 304,
      10_000,
      5,
    );
    expect(replays).toHaveLength(1);
    // the same model as the events applied one by one
    const expected = memoryReadModel(openReadModel(':memory:'));
    expected.apply(...backlog, ...later);
    const served = openReadModel(f.lifecycle.servedFile(), { readonly: true });
    try {
      expect(dumpModel(served)).toEqual(dumpModel(expected.db));
    } finally {
      served.close();
      expected.db.close();
    }
  });

  it('counts a replayed model it cannot propose as a failed replay: the served model catches up by itself', async () => {
    const replays: ReplayThread[] = [];
    let f: LifecycleFixture | null = null;
    f = lifecycleFixture(dataDir(), {
      ...slowly,
      catchUp: {
        minLag: 100,
        minShare: 0.6,
        start: inProcessReplays(() => f!, replays),
        retry: { initialMs: 60_000, maxMs: 60_000 },
      },
    });
    running.push(f);
    f.files.proposeNext = () => {
      throw new Error('ENOSPC: no space left on device');
    };
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 300)]);
    f.lifecycle.start();
    const first = f.lifecycle.servedFile();
    await waitUntil('live', async () => (await live(f)) && totalOf(f) === 300, 10_000, 5);
    expect(replays).toHaveLength(1);
    await replays[0]!.done;
    expect(f.lifecycle.servedFile()).toBe(first);
    expect(f.lifecycle.health().replay).toBeNull();
    // still far behind by the same measure after more events, no second replay before the retry
    f.publish(orders(301, 500));
    await waitUntil('live again', async () => (await live(f)) && totalOf(f) === 800, 10_000, 5);
    expect(replays).toHaveLength(1);
  });

  it('leaves a lag below the least lag to the projector', async () => {
    const replays: ReplayThread[] = [];
    let f: LifecycleFixture | null = null;
    f = lifecycleFixture(dataDir(), {
      catchUp: { minLag: 1000, minShare: 0, start: inProcessReplays(() => f!, replays) },
    });
    running.push(f);
    f.publish([issueKeyOf(1), ...orders(1, 300)]);
    f.lifecycle.start();
    await waitUntil('live', () => live(f), 10_000, 5);
    expect(totalOf(f)).toBe(300);
    expect(replays).toHaveLength(0);
  });

  it('starts no replay while another rebuild holds the lock', async () => {
    const replays: { aborted: boolean }[] = [];
    const f = lifecycleFixture(dataDir(), {
      ...slowly,
      catchUp: { minLag: 1, minShare: 0, start: stuckReplays(replays) },
    });
    running.push(f);
    const release = f.files.acquireRebuildLock('an operator rebuild');
    try {
      f.kafka.batchSize = 5;
      f.publish([issueKeyOf(1), ...orders(1, 1000)]);
      f.lifecycle.start();
      await waitUntil('live', () => live(f), 10_000, 5);
      expect(replays).toHaveLength(0);
      expect(totalOf(f)).toBe(1000);
    } finally {
      release();
    }
  });

  it('gives the served model its projector back when the replay fails, and waits before the next', async () => {
    const replays: { aborted: boolean }[] = [];
    const f = lifecycleFixture(dataDir(), {
      ...slowly,
      catchUp: {
        minLag: 1,
        minShare: 0,
        start: stuckReplays(replays, true),
        retry: { initialMs: 60_000, maxMs: 60_000 },
      },
    });
    running.push(f);
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 1000)]);
    f.lifecycle.start();
    await waitUntil('live', () => live(f), 10_000, 5);
    expect(replays.length).toBe(1);
    expect(totalOf(f)).toBe(1000);
    expect(f.lifecycle.health().replay).toBeNull();
  });

  it('aborts a replay that makes no progress for the stall timeout, and catches up by itself', async () => {
    const replays: { aborted: boolean }[] = [];
    const f = lifecycleFixture(dataDir(), {
      ...slowly,
      stallTimeoutMs: 300,
      catchUp: {
        minLag: 1,
        minShare: 0,
        start: stuckReplays(replays),
        retry: { initialMs: 60_000, maxMs: 60_000 },
      },
    });
    running.push(f);
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 1000)]);
    f.lifecycle.start();
    await waitUntil('a replay', async () => (await f.tick(), replays.length === 1), 10_000, 5);
    const during = f.lifecycle.health();
    expect(during.replay).toEqual({ done: 0, total: null });
    expect(during.ready).toBe(false);
    expect(during.reasons).toContain('catching up by replay into a new model (0 of unknown messages)');
    expect(f.lifecycle.servedProjector()).toBeNull();
    await waitUntil('live', () => live(f), 10_000, 5);
    expect(replays).toEqual([{ aborted: true }]);
    expect(totalOf(f)).toBe(1000);
  });

  it('aborts a replay under way when the service stops', async () => {
    const replays: { aborted: boolean }[] = [];
    const f = lifecycleFixture(dataDir(), {
      ...slowly,
      catchUp: { minLag: 1, minShare: 0, start: stuckReplays(replays) },
    });
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 1000)]);
    f.lifecycle.start();
    await waitUntil('a replay', async () => (await f.tick(), replays.length === 1), 10_000, 5);
    await f.lifecycle.stop();
    expect(replays).toEqual([{ aborted: true }]);
    expect(f.lifecycle.state()).toBe('stopped');
  });
});

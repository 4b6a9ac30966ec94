/**
 * The keys store over a projector the test drives (no broker, no consumer): what it asks of its
 * consumer, how it turns fetches, batches and unreadable batches into readiness, when its watchdog
 * restarts the consumer, and how a successor store retires its predecessor.
 */
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProjectorSpec, RunningProjector } from '../../src/projector/projector-handle.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { keysFile, KeysStore, type KeysStoreOptions } from '../../src/keys/keys-store.js';
import { offsetKey, type UnreadableBatch } from '../../src/kafka/port.js';
import type { Clock } from '../../src/supervision/clock.js';
import type { RestartReason } from '../../src/supervision/supervisor.js';
import { openReadModel } from '../../src/read-model/database.js';
import type { BatchOutcome } from '../../src/read-model/writer.js';
import { apiKeyIssued } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { descriptorsOn } from '../helpers/open-files.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('keys-store-driven');
let n = 0;
const dataDir = (): string => {
  const dir = join(root, `data-${(n += 1)}`);
  mkdirSync(dir, { recursive: true });
  return dir;
};
const stores: KeysStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.stop();
});

/** A projector the test drives: its positions are what the test sets. */
interface Driven {
  spec: ProjectorSpec;
  positions: Map<string, number>;
  fail: (error: Error) => void;
  stopped: boolean;
}

/** A clock the test moves; a restart's wait ends at once, a start's timeout only when aborted. */
function manualClock(): Clock & { at: number; sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    at: 1000,
    sleeps,
    now() {
      return this.at;
    },
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        sleeps.push(ms);
        if (ms < 10_000) resolve();
        signal?.addEventListener('abort', () => resolve(), { once: true });
      }),
  };
}

/** `told` false: nobody is told of restarts, batches or a successor's change of files. */
function drivenStore(
  dir: string,
  overrides: Partial<KeysStoreOptions> = {},
  told = true,
): {
  store: KeysStore;
  clock: Clock & { at: number; sleeps: number[] };
  started: Driven[];
  restarts: RestartReason[];
  applied: BatchOutcome[];
  changes: number[];
  /** the messages logged */
  logs: string[];
  /** the lines logged, without pino's own fields */
  lines: Record<string, unknown>[];
} {
  const clock = manualClock();
  const started: Driven[] = [];
  const restarts: RestartReason[] = [];
  const applied: BatchOutcome[] = [];
  const changes: number[] = [];
  const logs: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const store = new KeysStore({
    dataDir: dir,
    topics: testTopics,
    groupId: 'orders',
    startProjector: (spec) => {
      let fail: (error: Error) => void = () => undefined;
      const driven: Driven = {
        spec,
        positions: new Map(),
        fail: (error) => fail(error),
        stopped: false,
      };
      started.push(driven);
      const projector: RunningProjector = {
        positions: () => driven.positions,
        failed: new Promise<Error>((resolve) => (fail = resolve)),
        pause: () => undefined,
        stop: () => {
          driven.stopped = true;
          return Promise.resolve();
        },
      };
      return Promise.resolve(projector);
    },
    clock,
    logger: pino(
      { level: 'info', base: null, timestamp: false },
      {
        write: (line: string) => {
          const parsed = JSON.parse(line) as { msg: string };
          logs.push(parsed.msg);
          lines.push(parsed);
        },
      },
    ),
    stallMs: 200,
    readyMaxLag: 0,
    ...(told
      ? {
          restarted: (reason: RestartReason) => restarts.push(reason),
          batchApplied: (outcome: BatchOutcome) => applied.push(outcome),
          changed: () => changes.push(changes.length + 1),
        }
      : {}),
    ...overrides,
  });
  stores.push(store);
  return { store, clock, started, restarts, applied, changes, logs, lines };
}

/** A store of projection version 1 in `dir` that has read offsets 0…2 of the keys topic's partition 0. */
function predecessorIn(dir: string): string {
  const file = keysFile(dir, 1);
  const model = memoryReadModel(openReadModel(file, { store: keysStoreSchema }));
  for (let i = 0; i < 3; i += 1) model.apply(apiKeyIssued(`k${i}`, 1, sha256Hex(`key-${i}`)));
  model.db.prepare(`UPDATE projection_meta SET value = '1' WHERE key = 'projection_version'`).run();
  model.db.close();
  return file;
}

const outcome = (nextOffset: number): BatchOutcome => ({
  applied: 1,
  unchanged: 0,
  deadLettered: 0,
  alreadyApplied: 0,
  appliedByType: {},
  deadLettersByReason: {},
  nextOffset,
  durationMs: 0,
});

const unreadableAt = (partition: number): UnreadableBatch => ({
  topic: testTopics.apiKeys,
  partition,
  offset: 3,
  lastOffset: 4,
  cause: 'zstd',
  retryInMs: 100,
});

async function running(started: Driven[], count = 1): Promise<Driven> {
  await waitUntil(`start ${count}`, () => started.length >= count, 10_000, 5);
  return started[count - 1]!;
}

describe('the keys store over a driven projector', () => {
  it("asks for a consumer of the keys topic only, in a group of its own at each start, counting the store's commits", async () => {
    const { store, clock, started } = drivenStore(dataDir());
    store.start();
    store.start();
    const first = await running(started);
    expect(first.spec).toMatchObject({
      file: store.file,
      groupId: 'orders.keys.1000.1',
      roles: ['apiKeys'],
      fetchMaxWaitMs: 66, // a third of the store's stall bound of 200 ms
    });
    expect(first.spec.commits).toBe(store.ref().commits);
    expect(first.spec.giveWay).toEqual(new Int32Array(1));
    expect(first.spec.signal).toBeInstanceOf(AbortSignal);
    expect(store.projector()).not.toBeNull();
    clock.at = 2000;
    first.fail(new Error('the broker went away'));
    const second = await running(started, 2);
    expect(second.spec.groupId).toBe('orders.keys.2000.2');
    // one supervisor: the second start() started nothing more
    expect(started).toHaveLength(2);
  });

  it('gives a start 30 s, or the stall bound where that is longer', async () => {
    const short = drivenStore(dataDir(), { stallMs: 200 });
    short.store.start();
    await running(short.started);
    expect(short.clock.sleeps).toEqual([30_000]);
    const long = drivenStore(dataDir(), { stallMs: 45_000 });
    long.store.start();
    await running(long.started);
    expect(long.clock.sleeps).toEqual([45_000]);
  });

  it('is ready once its consumer has fetched and measured the keys topic, and unready again when a fetch is overdue', async () => {
    const { store, clock, started } = drivenStore(dataDir(), { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    expect(store.reasons(clock.at)).toEqual([
      'the keys consumer has not read the keys topic yet',
      'keys lag not measured yet',
    ]);
    p.spec.onFetched?.();
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 5);
    expect(
      store.measured(
        [
          { topic: testTopics.apiKeys, partition: 0, start: 0, end: 5 },
          { topic: testTopics.orders, partition: 0, start: 0, end: 9 },
        ],
        clock.at,
      ),
    ).toEqual([{ topic: testTopics.apiKeys, partition: 0, nextOffset: 5, endOffset: 5, lag: 0 }]);
    expect(store.reasons(clock.at)).toEqual([]);
    expect(store.reasons(clock.at + 60_001)).toEqual([
      'the keys consumer has not fetched for 61 s; revocations since are not seen',
    ]);
  });

  it('joins its reasons and partitions to a readiness report of the orders model', async () => {
    const { store, clock, started } = drivenStore(dataDir(), { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    const report = {
      ready: true,
      reasons: ['orders fine'],
      partitions: [{ topic: testTopics.orders, partition: 0, nextOffset: 1, endOffset: 1, lag: 0 }],
      other: 'kept',
    };
    expect(store.joinedTo(report, clock.at)).toEqual({
      ...report,
      ready: false,
      reasons: [
        'orders fine',
        'the keys consumer has not read the keys topic yet',
        'keys lag not measured yet',
      ],
    });
    p.spec.onFetched?.();
    store.measured([{ topic: testTopics.apiKeys, partition: 0, start: 0, end: 0 }], clock.at);
    expect(store.joinedTo(report, clock.at)).toEqual({
      ...report,
      partitions: [
        ...report.partitions,
        { topic: testTopics.apiKeys, partition: 0, nextOffset: 0, endOffset: 0, lag: 0 },
      ],
    });
    expect(store.joinedTo({ ...report, ready: false }, clock.at).ready).toBe(false);
  });

  it('reports an unreadable batch until its partition moves on, and forgets it when a new consumer runs', async () => {
    const { store, clock, started, applied } = drivenStore(dataDir(), { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    p.spec.onFetched?.();
    store.measured([], clock.at);
    p.spec.onUnreadable?.(unreadableAt(1));
    p.spec.onUnreadable?.(unreadableAt(2));
    expect(store.reasons(clock.at)).toHaveLength(2);
    expect(store.reasons(clock.at)[0]).toMatch(/^api-keys partition 1 cannot be read at offset 3 \(zstd\)/);
    // a batch of partition 1 applied: that partition has moved on
    p.spec.onBatch(testTopics.apiKeys, 1, outcome(5));
    expect(applied).toEqual([outcome(5)]);
    expect(store.reasons(clock.at)).toEqual([expect.stringMatching(/partition 2 cannot be read/) as unknown]);
    p.fail(new Error('gone'));
    await running(started, 2);
    expect(store.reasons(clock.at)).toEqual([]);
  });

  it('counts a batch as a fetch', async () => {
    const { store, clock, started } = drivenStore(dataDir(), { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    store.measured([], clock.at);
    clock.at = 5000;
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(1));
    expect(store.reasons(5000 + 60_000)).toEqual([]);
    expect(store.reasons(5000 + 60_001)).toHaveLength(1);
  });

  it('restarts a consumer that has not fetched within the bound, and not one that has', async () => {
    const { store, clock, started, restarts, lines } = drivenStore(dataDir(), { stallMs: 200 });
    store.start();
    const p = await running(started);
    clock.at += 150;
    p.spec.onFetched?.();
    clock.at += 200;
    // the bound itself since its fetch: the watchdog, which looks every 50 ms, leaves it
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toEqual([]);
    clock.at += 1;
    await running(started, 2);
    expect(restarts).toEqual(['stalled']);
    expect(p.stopped).toBe(true);
    expect(lines).toContainEqual({
      level: 40,
      stalledMs: 201,
      stalls: 1,
      msg: 'the keys consumer has not fetched for too long; starting a new one',
    });
    expect(lines).toContainEqual(expect.objectContaining({ projector: 'keys', reason: 'stalled' }));
    // the next consumer, replaced without a fetch in a row, gets twice as long
    clock.at += 400;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toEqual(['stalled']);
    clock.at += 1;
    await running(started, 3);
    expect(restarts).toEqual(['stalled', 'stalled']);
    expect(lines).toContainEqual(expect.objectContaining({ stalledMs: 401, stalls: 2 }));
  });

  it('leaves a consumer that is still starting to its start timeout', async () => {
    const attempts: ProjectorSpec[] = [];
    const { store, clock, restarts, logs } = drivenStore(dataDir(), {
      stallMs: 200,
      startProjector: (spec) => {
        attempts.push(spec);
        return new Promise<RunningProjector>((_, reject) =>
          spec.signal?.addEventListener('abort', () => reject(new Error('given up'))),
        );
      },
    });
    expect(store.reasons(clock.at)).toEqual([
      'the keys consumer has not read the keys topic yet',
      'keys lag not measured yet',
    ]);
    store.start();
    await waitUntil('a start', () => attempts.length === 1, 10_000, 5);
    clock.at += 10_000;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toEqual([]);
    expect(logs).not.toContain('the keys consumer has not fetched for too long; starting a new one');
    // no consumer runs: the positions stored with the store
    expect(store.positions()).toEqual(new Map());
  });

  it('leaves the restart of a failed consumer to its backoff', async () => {
    const { store, clock, started, restarts, logs } = drivenStore(dataDir(), {
      stallMs: 200,
      backoff: { initialMs: 60_000, maxMs: 60_000 },
    });
    store.start();
    (await running(started)).fail(new Error('gone'));
    await waitUntil('the failure is seen', () => restarts.length === 1, 10_000, 5);
    clock.at += 10_000;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toEqual(['failed']);
    expect(logs).not.toContain('the keys consumer has not fetched for too long; starting a new one');
  });

  it('names the cause of a failed consumer among its reasons, and waits its backoff before the next start', async () => {
    const { store, clock, started } = drivenStore(dataDir(), { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    p.fail(new Error('the broker went away'));
    await running(started, 2);
    expect(store.reasons(clock.at)[0]).toBe(
      'the keys consumer has not read the keys topic yet (the broker went away)',
    );
    // 30 s for the first start, 200 ms (the keys backoff's first step), 30 s for the second start
    expect(clock.sleeps).toEqual([60_000, 200, 60_000]);
  });

  it('waits the backoff it is given', async () => {
    const { store, clock, started } = drivenStore(dataDir(), {
      stallMs: 60_000,
      backoff: { initialMs: 7, maxMs: 7 },
    });
    store.start();
    (await running(started)).fail(new Error('gone'));
    await running(started, 2);
    expect(clock.sleeps).toEqual([60_000, 7, 60_000]);
  });

  it('runs without anyone told of its restarts, batches or successor', async () => {
    const dir = dataDir();
    const predecessor = predecessorIn(dir);
    const bare: Partial<KeysStoreOptions> = { stallMs: 60_000 };
    const { store, started } = drivenStore(dir, bare, false);
    store.start();
    const p = await running(started);
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 3);
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(3));
    expect(store.ref().predecessor).toBeNull();
    p.fail(new Error('gone'));
    await running(started, 2);
    await waitUntil('the predecessor is removed', () => !existsSync(predecessor), 10_000, 5);
  });

  it('gives a new consumer the bound from its start to fetch, whenever the last one fetched', async () => {
    const { store, clock, started, restarts } = drivenStore(dataDir(), { stallMs: 200 });
    store.start();
    const p = await running(started);
    p.spec.onFetched?.();
    clock.at += 1000;
    p.fail(new Error('gone'));
    await running(started, 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(restarts).toEqual(['failed']);
  });

  it('stops its consumer and its watchdog', async () => {
    const { store, clock, started, restarts } = drivenStore(dataDir(), { stallMs: 200 });
    store.start();
    const p = await running(started);
    await store.stop();
    stores.splice(stores.indexOf(store), 1);
    expect(p.stopped).toBe(true);
    expect(store.projector()).toBeNull();
    // its lookup's connection too: nothing else has the file open here
    expect(descriptorsOn(store.file)).toBe(0);
    clock.at += 10_000;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(restarts).toEqual([]);
    expect(started).toHaveLength(1);
  });

  it('reads the positions stored with it while no consumer runs', () => {
    const dir = dataDir();
    const model = memoryReadModel(openReadModel(keysFile(dir), { store: keysStoreSchema }));
    model.apply(apiKeyIssued('k1', 1, sha256Hex('k1')));
    model.db.close();
    const { store } = drivenStore(dir);
    expect([...store.positions().values()]).toEqual([1]);
  });
});

describe('a successor keys store', () => {
  it('answers beside its predecessor until a batch brings it to the predecessor, then retires it once the request threads let it go', async () => {
    const dir = dataDir();
    const predecessor = predecessorIn(dir);
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const { store, started, changes, lines } = drivenStore(dir, {
      stallMs: 60_000,
      views: { publish: () => undefined, settled: () => settled },
    });
    expect(store.ref().predecessor).toBe(predecessor);
    expect(store.lookup().orgOfKeyHash(sha256Hex('key-0'))).toBe(1);
    store.start();
    const p = await running(started);
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 2);
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(2));
    expect(store.ref().predecessor).toBe(predecessor);
    expect(changes).toEqual([]);
    const before = store.ref();
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 3);
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(3));
    expect(changes).toEqual([1]);
    expect(store.ref()).toMatchObject({ file: store.file, predecessor: null, commits: before.commits });
    expect(store.ref().id).toBeGreaterThan(before.id);
    // the successor alone answers: it has read nothing here
    expect(store.lookup().orgOfKeyHash(sha256Hex('key-0'))).toBeNull();
    expect(lines).toContainEqual({
      level: 30,
      file: store.file,
      predecessor,
      msg: 'the keys store has reached its predecessor; the predecessor is retired',
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(existsSync(predecessor)).toBe(true);
    // stopping waits for the predecessor's retirement
    let stopped = false;
    const stopping = store.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stopped).toBe(false);
    settle();
    await stopping;
    stores.splice(stores.indexOf(store), 1);
    expect(existsSync(predecessor)).toBe(false);
    // the predecessor's connection closed with it
    expect(descriptorsOn(predecessor)).toBe(0);
    // reached once: a later batch changes nothing
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(4));
    expect(changes).toEqual([1]);
  });

  it('retires its predecessor when it has reached it without a batch (an empty keys topic)', async () => {
    const dir = dataDir();
    const predecessor = predecessorIn(dir);
    const { store, started, changes } = drivenStore(dir, { stallMs: 60_000 });
    store.start();
    const p = await running(started);
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 3);
    await waitUntil('the predecessor is removed', () => !existsSync(predecessor), 10_000, 5);
    expect(changes).toEqual([1]);
    expect(store.ref().predecessor).toBeNull();
  });

  it('logs a predecessor it cannot retire, and stops all the same', async () => {
    const dir = dataDir();
    const predecessor = predecessorIn(dir);
    const { store, started, lines } = drivenStore(dir, {
      stallMs: 60_000,
      views: { publish: () => undefined, settled: () => Promise.reject(new Error('a thread died')) },
    });
    store.start();
    const p = await running(started);
    p.positions.set(offsetKey(testTopics.apiKeys, 0), 3);
    p.spec.onBatch(testTopics.apiKeys, 0, outcome(3));
    await store.stop();
    stores.splice(stores.indexOf(store), 1);
    expect(lines).toContainEqual({
      level: 50,
      err: expect.objectContaining({ message: 'a thread died' }) as unknown,
      file: predecessor,
      msg: 'retiring the keys predecessor failed',
    });
  });
});

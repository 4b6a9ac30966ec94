/**
 * The keys store as a lifecycle configures it: its stall bound (KEYS_STALL_MS, 3 s unless given), its
 * restarts reported as the `keys` projector's, and what it is given only when the lifecycle has it.
 */
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { keysStoreOf } from '../../src/keys/keys-of-lifecycle.js';
import type { KeysStoreOptions } from '../../src/keys/keys-store.js';
import type { LifecycleOptions } from '../../src/lifecycle/options.js';
import type { ModelFiles } from '../../src/read-model/files.js';
import type { BatchOutcome } from '../../src/read-model/writer.js';
import { testTopics } from '../helpers/read-model.js';

vi.mock('../../src/keys/keys-store.js', () => ({
  /** keeps the options it is built with, and opens nothing */
  KeysStore: class {
    constructor(readonly options: KeysStoreOptions) {}
  },
}));

const optionsOf = (store: unknown): KeysStoreOptions => (store as { options: KeysStoreOptions }).options;

function lifecycleOptions(overrides: Partial<LifecycleOptions> = {}): LifecycleOptions {
  return {
    files: { dir: '/data' } as unknown as ModelFiles,
    topics: testTopics,
    groupId: 'orders-read-model',
    startProjector: () => {
      throw new Error('not started here');
    },
    endOffsets: () => Promise.resolve([]),
    clock: { now: () => 0, sleep: () => Promise.resolve() },
    logger: pino({ level: 'silent' }),
    readyMaxLag: 7,
    stallTimeoutMs: 1000,
    ...overrides,
  };
}

describe('the keys store of a lifecycle', () => {
  it("is the data directory's, with the lifecycle's topics, group, projector, clock, logger and lag bound", () => {
    const options = lifecycleOptions();
    const changed = (): void => undefined;
    expect(optionsOf(keysStoreOf(options, changed))).toEqual({
      dataDir: '/data',
      topics: testTopics,
      groupId: 'orders-read-model',
      startProjector: options.startProjector,
      clock: options.clock,
      logger: options.logger,
      stallMs: 3000,
      readyMaxLag: 7,
      changed,
      views: undefined,
    });
  });

  it('takes KEYS_STALL_MS and the keys backoff where given', () => {
    const backoff = { initialMs: 10, maxMs: 20 };
    const store = optionsOf(
      keysStoreOf(lifecycleOptions({ keysStallMs: 450, keysBackoff: backoff }), () => undefined),
    );
    expect(store.stallMs).toBe(450);
    expect(store.backoff).toBe(backoff);
  });

  it("reports its consumer's restarts as the keys projector's, and its applied batches", () => {
    const restarts: unknown[] = [];
    const applied: BatchOutcome[] = [];
    const batchApplied = (outcome: BatchOutcome): number => applied.push(outcome);
    const store = optionsOf(
      keysStoreOf(
        lifecycleOptions({
          events: { restarted: (projector, reason) => restarts.push([projector, reason]), batchApplied },
        }),
        () => undefined,
      ),
    );
    store.restarted?.('stalled');
    expect(restarts).toEqual([['keys', 'stalled']]);
    expect(store.batchApplied).toBe(batchApplied);
  });

  it('is given no restart or batch report where the lifecycle has none', () => {
    const store = optionsOf(keysStoreOf(lifecycleOptions({ events: {} }), () => undefined));
    expect('restarted' in store).toBe(false);
    expect('batchApplied' in store).toBe(false);
    expect('backoff' in store).toBe(false);
  });
});

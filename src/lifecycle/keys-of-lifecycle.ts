/** The keys store as the lifecycle of the served model runs it: its options, restarts and metrics. */
import type { LifecycleOptions } from './options.js';
import type { RestartReason } from '../supervision/supervisor.js';
import { KeysStore } from '../keys/keys-store.js';

/** The keys consumer must have fetched within this long for the replica to be ready (KEYS_STALL_MS). */
const defaultKeysStallMs = 3000;

/** The keys store of a lifecycle's data directory, with its consumer, restarts and metrics. */
export function keysStoreOf(options: LifecycleOptions, changed: () => void): KeysStore {
  const events = options.events;
  const restarted = events?.restarted;
  return new KeysStore({
    dataDir: options.files.dir,
    topics: options.topics,
    groupId: options.groupId,
    startProjector: options.startProjector,
    clock: options.clock,
    logger: options.logger,
    stallMs: options.keysStallMs ?? defaultKeysStallMs,
    readyMaxLag: options.readyMaxLag,
    ...(options.keysBackoff === undefined ? {} : { backoff: options.keysBackoff }),
    changed,
    views: options.views,
    ...(restarted === undefined ? {} : { restarted: (reason: RestartReason) => restarted('keys', reason) }),
    ...(events?.batchApplied === undefined ? {} : { batchApplied: events.batchApplied }),
  });
}

/**
 * The keys store as the lifecycle of the served model runs it: its options, restarts and metrics.
 * `KeysHost` is the port: what the keys need of whoever runs them, which the lifecycle's options
 * satisfy as they are. So the lifecycle imports the keys, and the keys never import the lifecycle.
 */
import type { TopicRole } from '../../schemas/streams.js';
import type { Backoff } from '../backoff.js';
import type { Logger } from '../logger.js';
import type { StartProjector } from '../projector/projector-handle.js';
import type { ViewSink } from '../read-model/read-view.js';
import type { BatchOutcome } from '../read-model/writer.js';
import type { Clock } from '../supervision/clock.js';
import type { RestartReason } from '../supervision/supervisor.js';
import { KeysStore } from './keys-store.js';

/** What the keys store is run with (`LifecycleOptions` is one). */
export interface KeysHost {
  files: { readonly dir: string };
  topics: Record<TopicRole, string>;
  groupId: string;
  startProjector: StartProjector;
  clock: Clock;
  logger: Logger;
  readyMaxLag: number;
  /** the keys store's consumer must have fetched within this long for the replica to be ready (default 3 s) */
  keysStallMs?: number;
  keysBackoff?: Backoff;
  views?: ViewSink;
  events?: {
    batchApplied?: (outcome: BatchOutcome) => void;
    restarted?: (projector: 'keys', reason: RestartReason) => void;
  };
}

/** The keys consumer must have fetched within this long for the replica to be ready (KEYS_STALL_MS). */
const defaultKeysStallMs = 3000;

/** The keys store of a lifecycle's data directory, with its consumer, restarts and metrics. */
export function keysStoreOf(options: KeysHost, changed: () => void): KeysStore {
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

/** What the keys store is given, and how its consumer is tuned: fetches, restarts, patience. */
import { rolesOfStore, type TopicRole } from '../../schemas/streams.js';
import type { StartProjector } from '../projector/projector-handle.js';
import type { Clock } from '../supervision/clock.js';
import type { Backoff } from '../backoff.js';
import type { RestartReason } from '../supervision/supervisor.js';
import type { Logger } from '../logger.js';
import type { ViewSink } from '../read-model/read-view.js';
import type { BatchOutcome } from '../read-model/writer.js';

export interface KeysStoreOptions {
  dataDir: string;
  topics: Record<TopicRole, string>;
  groupId: string;
  startProjector: StartProjector;
  clock: Clock;
  logger: Logger;
  /** not ready, and the consumer restarted, once it has not fetched for this long */
  stallMs: number;
  readyMaxLag: number;
  backoff?: Backoff;
  /** the files keys are read from changed (a successor took over): publish a new view */
  changed?: () => void;
  /** the request threads: a predecessor is closed once all of them have let it go */
  views?: ViewSink | undefined;
  batchApplied?: (outcome: BatchOutcome) => void;
  restarted?: (reason: RestartReason) => void;
}

/** The streams the keys store's consumer reads: those the registry says feed it (`schemas/streams.ts`). */
export const keysStoreRoles: readonly TopicRole[] = rolesOfStore('keys');

/**
 * How long an empty fetch of the keys may be held by the broker, so how often a fetch comes back
 * when nothing is published: a third of the stall bound, so that a live consumer fetches at least
 * three times within it, and at most 1 s. A revocation is not delayed by it: the broker answers a
 * held fetch as soon as a record arrives.
 */
export function keysFetchMaxWaitMs(stallMs: number): number {
  return Math.max(10, Math.min(1000, Math.floor(stallMs / 3)));
}
export const keysBackoff: Backoff = { initialMs: 200, maxMs: 2000 };
/** A start of the keys consumer still under way after this long is given up and tried again. */
export const keysStartTimeoutMs = 30_000;

/**
 * How long the running consumer may go without a fetch before it is replaced: `stallMs`, doubled
 * for each consumer replaced in a row without fetching (`stalls`), up to the start timeout. On a
 * machine so loaded that joining and a first fetch take longer than `stallMs`, a fixed bound would
 * replace every consumer before it reads. Readiness does not wait: the replica is unready after
 * `stallMs` without a fetch whatever the patience.
 */
export function keysPatienceMs(stallMs: number, stalls: number): number {
  return Math.min(stallMs * 2 ** stalls, Math.max(keysStartTimeoutMs, stallMs));
}

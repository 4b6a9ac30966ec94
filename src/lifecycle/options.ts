/** What the lifecycle is given, and what it reports as it goes. */
import type { TopicRole } from '../../schemas/streams.js';
import type { StartProjector } from '../projector/projector-handle.js';
import type { PartitionEnds, UnreadableBatch } from '../kafka/port.js';
import type { Logger } from '../logger.js';
import type { ModelFiles } from '../read-model/files.js';
import type { ViewSink } from '../read-model/read-view.js';
import type { BatchOutcome } from '../read-model/writer.js';
import type { Clock } from '../supervision/clock.js';
import type { PartitionLag } from '../supervision/lag.js';
import type { ServiceState } from './states.js';
import type { Backoff } from '../backoff.js';
import type { RestartReason } from '../supervision/supervisor.js';
import type { CatchUpOptions } from './catch-up.js';
import type { TopicRetention } from '../kafka/retention.js';
import type { LogReport } from './log-watch.js';

/** What the lifecycle reports as it goes; the service turns it into metrics. */
export interface LifecycleEvents {
  batchApplied?: (outcome: BatchOutcome) => void;
  restarted?: (projector: 'served' | 'candidate' | 'keys', reason: RestartReason) => void;
  lagMeasured?: (partitions: PartitionLag[]) => void;
  candidateProgress?: (ratio: number) => void;
  unreadable?: (batch: UnreadableBatch) => void;
  switched?: (from: string, to: string) => void;
  /** the topics' retention and log starts were checked (`log-watch.ts`) */
  logChecked?: (report: LogReport) => void;
  /** a change of state; `allowed` false: refused (the state stays `from`) */
  stateChanged?: (from: ServiceState, to: ServiceState, allowed: boolean) => void;
}

export interface LifecycleOptions {
  files: ModelFiles;
  topics: Record<TopicRole, string>;
  groupId: string;
  startProjector: StartProjector;
  endOffsets: (topics: readonly string[]) => Promise<PartitionEnds[]>;
  /** each topic's retention settings, checked with every lag measure (absent: not checked) */
  topicRetention?: (topics: readonly string[]) => Promise<TopicRetention[]>;
  clock: Clock;
  logger: Logger;
  readyMaxLag: number;
  stallTimeoutMs: number;
  backoff?: Backoff;
  events?: LifecycleEvents;
  /** the keys store's consumer must have fetched within this long for the replica to be ready (default 3 s) */
  keysStallMs?: number;
  /** the keys consumer's restarts (default 200 ms doubling to 2 s) */
  keysBackoff?: Backoff;
  /** the request threads, told each view the API answers from (none: this thread alone answers) */
  views?: ViewSink;
  /** a candidate that gains less than a tenth of its distance to the served model over this long stops giving way (default 30 s) */
  candidateGainWindowMs?: number;
  /** catching up by replay when far behind (`catch-up.ts`); absent: the projector alone catches up */
  catchUp?: CatchUpOptions;
  /** a transition outside the table throws (tests); otherwise it is refused, logged and counted */
  strictTransitions?: boolean;
}

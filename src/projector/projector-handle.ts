/** What the lifecycle needs of a running projector, wherever it runs (a worker thread, or in-process in tests). */
import type { TopicRole } from '../../schemas/streams.js';
import type { UnreadableBatch } from '../kafka/port.js';
import type { BatchOutcome } from '../read-model/writer.js';

export interface RunningProjector {
  /** next offset per partition (key `offsetKey(topic, partition)`) as committed with its model */
  positions(): ReadonlyMap<string, number>;
  /** settles with the error that stopped it by itself; never after `stop()` */
  readonly failed: Promise<Error>;
  /** stops fetching (diagnostics: the stall watchdog notices and restarts it) */
  pause(): void;
  /** stops consuming without committing anything partial and closes its write connection */
  stop(): Promise<void>;
}

export interface ProjectorSpec {
  /** the model file it projects into */
  file: string;
  /** consumer group membership; positions come from the file */
  groupId: string;
  /** a flag in shared memory (`pacing.ts`): while set, the projector gives way to API requests */
  giveWay: Int32Array;
  onBatch: (topic: string, partition: number, outcome: BatchOutcome) => void;
  /** a partition stopped at a batch the client cannot read (paused and retried; the others go on) */
  onUnreadable?: (batch: UnreadableBatch) => void;
  /** the topics it reads, by role (default: an orders model's, `projectorRoles` in `subscriptions.ts`) */
  roles?: readonly TopicRole[];
  /** a fetch came back from the broker: the consumer is reading (reported where asked for) */
  onFetched?: () => void;
  /** how long the broker may hold a fetch that finds nothing (default: 500 ms where `onFetched` is asked for, else kafkajs's) */
  fetchMaxWaitMs?: number;
  /** the file's commit counter in shared memory, moved around each commit (`commit-counter.ts`) */
  commits?: Int32Array;
  /**
   * Aborted when its owner stops while the projector is still starting (a broker gone or frozen can
   * keep a consumer joining for minutes): the start is given up, and the promise rejects once
   * whatever it started has ended.
   */
  signal?: AbortSignal;
}

export type StartProjector = (spec: ProjectorSpec) => Promise<RunningProjector>;

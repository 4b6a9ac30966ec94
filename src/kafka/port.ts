/**
 * The Kafka port: everything the service needs from Kafka, in the service's own terms. One adapter
 * (`kafkajs-adapter.ts` and its `kafkajs-*.ts` parts) implements it with the client library;
 * `test/helpers/memory-kafka.ts` implements it in memory for fast tests of the projector and the
 * lifecycle above it.
 */

import type { TopicCreation, TopicRetention } from './retention.js';

/** One message as the broker stored it; `value` null is a tombstone. */
export interface RawMessage {
  /** Kafka offset, a decimal string */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
}

/**
 * What one fetch delivered for one partition. `next` is the client's own position after the batch:
 * it also steps over what no consumer receives (transaction markers, aborted messages, compacted
 * gaps), so a model that stores it reaches the end offset. `messages` may be empty.
 */
export interface FetchedBatch {
  topic: string;
  partition: number;
  messages: RawMessage[];
  next: number;
}

/** Where a partition's log starts and ends (the next offset to be written, committed data only). */
export interface PartitionEnds {
  topic: string;
  partition: number;
  start: number;
  end: number;
}

/** A record batch the client could not read at a partition's position (a codec it lacks, corrupt data). */
export interface UnreadableBatch {
  topic: string;
  partition: number;
  offset: number;
  /** the batch's last offset, read from its header (null when even that cannot be read) */
  lastOffset: number | null;
  cause: string;
  /** the partition is paused; it is fetched again after this delay (doubling while it fails) */
  retryInMs: number;
}

/**
 * The consumer group of one start of a consumer: a group of its own each time, so that no membership
 * of an earlier start (a killed process's lives on for the session timeout) holds a partition from
 * it. The service keeps its positions in SQLite and commits no offsets to a group; a stopped
 * consumer's group is deleted once the consumer has left it (`Consumption.stop`). One left by a
 * killed process, or by a shutdown that closed the port before the goodbye ended, is empty with no
 * offsets: the broker removes such a group at its next expiry check
 * (`offsets.retention.check.interval.ms`, 10 minutes by default).
 */
export function groupOfStart(prefix: string, now: number, start: number): string {
  return `${prefix}.${now}.${start}`;
}

export interface ConsumeOptions {
  /** Membership only: positions come from `startAt`, never from the group's committed offsets. */
  groupId: string;
  topics: readonly string[];
  /** where to start reading a partition; undefined: its log start */
  startAt: (topic: string, partition: number) => number | undefined;
  /** called for each batch, in order per partition; nothing else is fetched for it until it returns */
  onBatch: (batch: FetchedBatch) => void | Promise<void>;
  /**
   * a partition stopped at a batch the client cannot read; every other partition goes on. An offset
   * returned moves the partition there at once (an operator's recorded decision to skip the batch).
   */
  onUnreadable?: (batch: UnreadableBatch) => number | undefined;
  /**
   * A fetch came back from the broker (with data or empty after `maxWaitMs`), the consumer holding
   * every partition of its topics: proof that it is reading, for whoever must know it still is.
   */
  onFetched?: () => void;
  /** how long the broker may hold a fetch that finds nothing new (default: the client's) */
  maxWaitMs?: number;
}

export interface Consumption {
  /** settles with the error that ended consumption for good; never while it runs or after `stop()` */
  readonly failed: Promise<Error>;
  /** stops fetching every partition (diagnostics) */
  pause(): void;
  /** leaves the group, then deletes it (best effort); no batch is handed over after it resolves */
  stop(): Promise<void>;
}

export interface OutgoingMessage {
  topic: string;
  key: string;
  value: Buffer | string | null;
}

export interface KafkaPort {
  consume(options: ConsumeOptions): Promise<Consumption>;
  endOffsets(topics: readonly string[]): Promise<PartitionEnds[]>;
  /** each topic's id (Kafka's topic UUID, hex) by name; empty where the broker cannot name them */
  topicIds(topics: readonly string[]): Promise<ReadonlyMap<string, string>>;
  listTopics(): Promise<string[]>;
  /** creates the topics that do not exist yet, keeping every event (`retention.ts`); returns those it created */
  createTopics(topics: readonly string[], creation: TopicCreation): Promise<string[]>;
  /** what each topic keeps, as its configuration says */
  topicRetention(topics: readonly string[]): Promise<TopicRetention[]>;
  /** sets each topic to keep every event from now on (`keepEveryEvent`) */
  retainEveryEvent(topics: readonly string[]): Promise<void>;
  /** sends the messages in order per topic, acknowledged by every in-sync replica */
  publish(messages: readonly OutgoingMessage[]): Promise<void>;
  /** best effort: a leftover empty group with no offsets also expires on the broker by itself */
  deleteGroup(groupId: string): Promise<void>;
  close(): Promise<void>;
}

/** The key of a partition in position maps (`Positions`). */
export function offsetKey(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}

export function splitOffsetKey(key: string): [string, number] {
  const colon = key.indexOf(':');
  return [key.slice(colon + 1), Number(key.slice(0, colon))];
}

/** The next offset to read per partition, keyed by `offsetKey`. */
export type Positions = ReadonlyMap<string, number>;

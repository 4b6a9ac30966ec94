/**
 * The Kafka port in memory, for fast tests of the projector and the lifecycle above it. Logs are
 * per partition; a transaction marker takes an offset that no consumer receives, as on a broker.
 * The broker can be taken down and brought back, and consumption can be made to fail.
 */
import type {
  ConsumeOptions,
  Consumption,
  FetchedBatch,
  KafkaPort,
  OutgoingMessage,
  PartitionEnds,
} from '../../src/kafka/port.js';
import { keepEveryEvent, type TopicRetention } from '../../src/kafka/retention.js';

interface StoredRecord {
  key: Buffer | null;
  value: Buffer | null;
  /** a transaction marker: it takes an offset but is never delivered */
  marker: boolean;
}

export class BrokerUnreachable extends Error {
  readonly code = 'BROKER_UNREACHABLE';
  constructor() {
    super('the broker is unreachable');
  }
}

export class MemoryKafka implements KafkaPort {
  private readonly logs = new Map<string, StoredRecord[][]>();
  private down = false;
  /** every consumer fetches for the first time this long after it was started */
  firstFetchDelayMs = 0;
  private readonly consumptions = new Set<{ fail: (error: Error) => void }>();
  /** how many records one fetch hands over per partition */
  batchSize = 50;
  /** consumptions started, failed starts included */
  consumeCalls = 0;
  /** partitions whose batch at an offset cannot be read, by `partition:topic` */
  private readonly unreadableAt = new Map<string, { offset: number; cause: string }>();
  /** record batches that cannot be read, their header readable (first and last offset), by `partition:topic` */
  private readonly unreadableBatches = new Map<string, { first: number; last: number; cause: string }[]>();

  /** From `offset` on, the partition's batches cannot be read (a codec the client lacks) until `readable()`. */
  makeUnreadable(topic: string, partition: number, offset: number, cause: string): void {
    this.unreadableAt.set(`${partition}:${topic}`, { offset, cause });
  }

  /**
   * The records `first`..`last` of a partition form one record batch that cannot be read, its
   * header readable: a consumer reaching it is told both offsets, and no fetch takes a record of it.
   */
  makeUnreadableBatch(topic: string, partition: number, first: number, last: number, cause: string): void {
    const key = `${partition}:${topic}`;
    this.unreadableBatches.set(key, [...(this.unreadableBatches.get(key) ?? []), { first, last, cause }]);
  }

  readable(topic: string, partition: number): void {
    this.unreadableAt.delete(`${partition}:${topic}`);
    this.unreadableBatches.delete(`${partition}:${topic}`);
  }

  /** where each partition's log starts, by `partition:topic` (0 when absent) */
  private readonly logStarts = new Map<string, number>();
  /** each topic's settings, as `topicRetention` reports them (default: keeping every event) */
  readonly retention = new Map<string, Record<string, string | null>>();

  /** each topic's id; `recreate` gives it a new one */
  private readonly ids = new Map<string, string>();
  private nextId = 1;

  /** Deletes the topic and creates it again: empty, with a new id. */
  recreate(topic: string): void {
    this.logs.set(
      topic,
      Array.from({ length: this.partitions }, () => []),
    );
    for (let partition = 0; partition < this.partitions; partition += 1)
      this.logStarts.delete(`${partition}:${topic}`);
    this.ids.set(topic, String(this.nextId++).padStart(32, '0'));
  }

  topicIds(topics: readonly string[]): Promise<ReadonlyMap<string, string>> {
    if (this.down) return Promise.reject(new BrokerUnreachable());
    for (const topic of topics)
      if (!this.ids.has(topic)) this.ids.set(topic, String(this.nextId++).padStart(32, '0'));
    return Promise.resolve(new Map(topics.map((topic) => [topic, this.ids.get(topic)!])));
  }

  /** Deletes the partition's records below `before`, as retention or `deleteRecords` does. */
  deleteRecords(topic: string, partition: number, before: number): void {
    const key = `${partition}:${topic}`;
    this.logStarts.set(key, Math.max(this.logStarts.get(key) ?? 0, before));
  }

  constructor(
    topics: readonly string[],
    private readonly partitions = 3,
  ) {
    for (const topic of topics)
      this.logs.set(
        topic,
        Array.from({ length: partitions }, () => []),
      );
  }

  /** Takes the broker away: running consumptions fail, and every call fails until `recover()`. */
  breakDown(): void {
    this.down = true;
    for (const c of this.consumptions) c.fail(new BrokerUnreachable());
  }

  recover(): void {
    this.down = false;
  }

  /** Appends records to one partition; `marker` records stand for transaction markers. */
  append(
    topic: string,
    partition: number,
    records: readonly { key: string | null; value: string | Buffer | null; marker?: boolean }[],
  ): void {
    const log = this.log(topic, partition);
    for (const r of records) {
      log.push({
        key: r.key === null ? null : Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        marker: r.marker === true,
      });
    }
  }

  partitionOf(key: string): number {
    let hash = 0;
    for (const char of key) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
    return hash % this.partitions;
  }

  private log(topic: string, partition: number): StoredRecord[] {
    const log = this.logs.get(topic)?.[partition];
    if (log === undefined) throw new Error(`no partition ${topic}/${partition}`);
    return log;
  }

  consume(options: ConsumeOptions): Promise<Consumption> {
    this.consumeCalls += 1;
    if (this.down) return Promise.reject(new BrokerUnreachable());
    let stopped = false;
    let paused = false;
    let fail: (error: Error) => void = () => undefined;
    const failed = new Promise<Error>((resolve) => (fail = resolve));
    const entry = {
      fail: (error: Error) => {
        if (stopped) return;
        stopped = true;
        this.consumptions.delete(entry);
        fail(error);
      },
    };
    this.consumptions.add(entry);
    const positions = new Map<string, number>();
    const retries = new Map<string, number>();
    let loopEnded: () => void = () => undefined;
    const loopDone = new Promise<void>((resolve) => (loopEnded = resolve));
    const loop = async (): Promise<void> => {
      // a join and a first fetch that take this long (a loaded machine)
      if (this.firstFetchDelayMs > 0)
        await new Promise((resolve) => setTimeout(resolve, this.firstFetchDelayMs));
      while (!stopped) {
        let delivered = false;
        if (!paused) {
          for (const topic of options.topics) {
            const partitions = this.logs.get(topic) ?? [];
            for (let partition = 0; partition < partitions.length; partition += 1) {
              const key = `${partition}:${topic}`;
              const log = partitions[partition]!;
              const from = positions.get(key) ?? options.startAt(topic, partition) ?? 0;
              if (from < (this.logStarts.get(key) ?? 0)) {
                // as the patched client does: an offset the log no longer holds fails the consumer
                entry.fail(new Error(`offset ${from} out of range on ${topic} partition ${partition}`));
                break;
              }
              if (from >= log.length) continue;
              const batches = this.unreadableBatches.get(key) ?? [];
              const at = batches.find((b) => from >= b.first && from <= b.last);
              const fromOn = this.unreadableAt.get(key);
              const blocked =
                at === undefined
                  ? fromOn !== undefined && from >= fromOn.offset
                    ? { lastOffset: null, cause: fromOn.cause }
                    : undefined
                  : { lastOffset: at.last, cause: at.cause };
              if (blocked !== undefined) {
                // As the adapter does: report, pause the partition, try it again after a delay, or
                // move it where the consumer's owner says.
                const retryAt = retries.get(key) ?? 0;
                if (Date.now() >= retryAt) {
                  const moveTo = options.onUnreadable?.({
                    topic,
                    partition,
                    offset: from,
                    lastOffset: blocked.lastOffset,
                    cause: blocked.cause,
                    retryInMs: 50,
                  });
                  if (moveTo === undefined) retries.set(key, Date.now() + 50);
                  else {
                    retries.delete(key);
                    positions.set(key, moveTo);
                  }
                }
                continue;
              }
              // A fetch stops short of the next unreadable batch, as a broker's record batches do.
              const nextUnreadable = Math.min(
                ...batches.filter((b) => b.first > from).map((b) => b.first),
                from + this.batchSize,
              );
              const taken = log.slice(from, nextUnreadable);
              const batch: FetchedBatch = {
                topic,
                partition,
                messages: taken.flatMap((r, i) =>
                  r.marker ? [] : [{ offset: String(from + i), key: r.key, value: r.value }],
                ),
                next: from + taken.length,
              };
              try {
                await options.onBatch(batch);
              } catch (error) {
                entry.fail(error instanceof Error ? error : new Error(String(error)));
                break;
              }
              positions.set(key, batch.next);
              delivered = true;
            }
          }
        }
        if (!paused) options.onFetched?.();
        if (!delivered) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      loopEnded();
    };
    void loop();
    return Promise.resolve({
      failed,
      pause: () => (paused = true),
      stop: async () => {
        stopped = true;
        this.consumptions.delete(entry);
        await loopDone;
      },
    });
  }

  endOffsets(topics: readonly string[]): Promise<PartitionEnds[]> {
    if (this.down) return Promise.reject(new BrokerUnreachable());
    return Promise.resolve(
      topics.flatMap((topic) =>
        (this.logs.get(topic) ?? []).map((log, partition) => ({
          topic,
          partition,
          start: this.logStarts.get(`${partition}:${topic}`) ?? 0,
          end: log.length,
        })),
      ),
    );
  }

  topicRetention(topics: readonly string[]): Promise<TopicRetention[]> {
    if (this.down) return Promise.reject(new BrokerUnreachable());
    return Promise.resolve(
      topics.map((topic) => ({ topic, settings: this.retention.get(topic) ?? { ...keepEveryEvent } })),
    );
  }

  retainEveryEvent(topics: readonly string[]): Promise<void> {
    for (const topic of topics) this.retention.set(topic, { ...keepEveryEvent });
    return Promise.resolve();
  }

  listTopics(): Promise<string[]> {
    return Promise.resolve([...this.logs.keys()]);
  }

  createTopics(topics: readonly string[]): Promise<string[]> {
    const missing = topics.filter((t) => !this.logs.has(t));
    for (const topic of missing)
      this.logs.set(
        topic,
        Array.from({ length: this.partitions }, () => []),
      );
    return Promise.resolve(missing);
  }

  publish(messages: readonly OutgoingMessage[]): Promise<void> {
    if (this.down) return Promise.reject(new BrokerUnreachable());
    for (const m of messages) this.append(m.topic, this.partitionOf(m.key), [{ key: m.key, value: m.value }]);
    return Promise.resolve();
  }

  deleteGroup(): Promise<void> {
    return Promise.resolve();
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

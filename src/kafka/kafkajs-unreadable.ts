/**
 * The partitions at a batch the client cannot read, paused by the patched kafkajs (README,
 * "Requirements"): each is fetched again after a delay that doubles while it keeps failing (a batch
 * read from it starts the delays over), or moved past the batch at once when the consumer's owner
 * says where to.
 */
import kafkajs from './kafkajs-client.js';
import { backoffDelay, type Backoff } from '../backoff.js';
import type { ConsumeOptions } from './port.js';

// Off the default export: kafkajs's errors, the patch's KafkaJSUnreadableBatch among them, are spread
// into its exports, which Node's detection of CommonJS named exports does not see.
const { KafkaJSUnreadableBatch } = kafkajs;

/** Delays before fetching an unreadable partition again: doubling from 1 s, at most 10 s. */
const unreadableRetry = { initialMs: 1000, maxMs: 10_000 } satisfies Backoff;

export class UnreadablePartitions {
  private readonly attempts = new Map<string, number>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly consumer: kafkajs.Consumer,
    private readonly consume: ConsumeOptions,
  ) {}

  /** An error the consumer emitted as unreadable: a typed unreadable batch is retried or skipped. */
  report(error: unknown): void {
    if (this.stopped || !(error instanceof KafkaJSUnreadableBatch)) return;
    const { topic, partition } = error;
    const key = `${partition}:${topic}`;
    const attempt = this.attempts.get(key) ?? 0;
    this.attempts.set(key, attempt + 1);
    const retryInMs = backoffDelay(unreadableRetry, attempt);
    const moveTo = this.consume.onUnreadable?.({
      topic,
      partition,
      offset: Number(error.offset),
      lastOffset: error.lastOffset === undefined ? null : Number(error.lastOffset),
      cause: error.cause instanceof Error ? error.cause.message : error.message,
      retryInMs,
    });
    if (moveTo !== undefined) {
      this.attempts.delete(key);
      this.consumer.seek({ topic, partition, offset: String(moveTo) });
      this.consumer.resume([{ topic, partitions: [partition] }]);
      return;
    }
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      if (!this.stopped) this.consumer.resume([{ topic, partitions: [partition] }]);
    }, retryInMs);
    this.retryTimers.add(timer);
  }

  /** A batch of the partition was read: its next failure waits the shortest delay again. */
  readAgain(topic: string, partition: number): void {
    this.attempts.delete(`${partition}:${topic}`);
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.retryTimers) clearTimeout(timer);
  }
}

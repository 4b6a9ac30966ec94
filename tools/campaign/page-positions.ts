/**
 * "A page within its own position": all through the campaign, during every ingest, a background
 * poller asks the running replicas for organizations' first pages (a new connection each, so every
 * request thread is asked), and every order a 200 shows is checked against the token the same
 * answer carried (`X-Read-Position`): a record creating that order must lie below the token's next
 * offset of its partition of the orders topic. The records come from reading the orders topic
 * alongside, uncommitted ones included, so an order counts as read if any copy of its creation is
 * below: the check never alarms falsely. An answer is decided once the topic has been read up to
 * its token; answers still undecided at the end (a batch the reader could not read) are counted.
 */
import { createHash } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import { parsePositionToken } from '../../src/http/position.js';
import type { Replica } from './cluster.js';
import type { Invariants } from './invariants.js';
import { getWith } from './probe.js';
import type { Random } from './random.js';
import { organizations, type World } from './world.js';

/** Answers waiting for the topic to be read up to their token; past it the oldest is dropped. */
const maxPending = 2000;

interface PendingAnswer {
  replica: string;
  /** the token's next offset of each partition of the orders topic */
  next: readonly number[];
  ids: number[];
}

export interface PagePositionCounts {
  /** 200s whose every order was found below the token */
  checked: number;
  /** answers dropped or left undecided (the topic not read up to their token) */
  undecided: number;
}

export class PagePositions {
  readonly counts: PagePositionCounts = { checked: 0, undecided: 0 };
  /** order id → the (partition, offset) of every record creating it */
  private readonly created = new Map<number, { partition: number; offset: number }[]>();
  /** per partition: the next offset the reader of the topic will deliver */
  private readonly read: number[] = [];
  private pending: PendingAnswer[] = [];
  private consumer: Consumer | null = null;
  private polling: Promise<void> | null = null;
  private stopping = false;
  private readonly topicId: string;

  constructor(
    private readonly kafka: Kafka,
    private readonly ordersTopic: string,
    private readonly replicas: readonly Replica[],
    private readonly world: World,
    private readonly invariants: Invariants,
    private readonly random: Random,
  ) {
    this.topicId = createHash('sha256').update(ordersTopic).digest().subarray(0, 3).toString('hex');
  }

  async start(): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: `campaign-page-positions-${Date.now()}`,
      readUncommitted: true,
    });
    this.consumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topic: this.ordersTopic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const message of batch.messages) {
          const offset = Number(message.offset);
          try {
            const event = JSON.parse(message.value?.toString('utf8') ?? '') as {
              type?: unknown;
              data?: { order_id?: unknown };
            };
            const id = event.data?.order_id;
            if (event.type === 'order.created' && typeof id === 'number') {
              const records = this.created.get(id) ?? [];
              records.push({ partition: batch.partition, offset });
              this.created.set(id, records);
            }
          } catch {
            // a poison message: it creates nothing
          }
          this.read[batch.partition] = Math.max(this.read[batch.partition] ?? 0, offset + 1);
        }
        // a batch ending in markers or aborted records: read up to its end
        const last = Number(batch.lastOffset());
        this.read[batch.partition] = Math.max(this.read[batch.partition] ?? 0, last + 1);
        this.decide();
        return Promise.resolve();
      },
    });
    this.polling = this.poll();
  }

  /** Stops polling, waits up to `waitMs` for the topic to be read up to every answer, then stops reading. */
  async stop(waitMs = 30_000): Promise<void> {
    this.stopping = true;
    await this.polling;
    const deadline = Date.now() + waitMs;
    while (this.pending.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      this.decide();
    }
    this.counts.undecided += this.pending.length;
    this.pending = [];
    await this.consumer?.disconnect();
  }

  private async poll(): Promise<void> {
    while (!this.stopping) {
      const running = this.replicas.filter((replica) => replica.running);
      const replica = running.length === 0 ? undefined : this.random.pick(running);
      if (replica === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      const org = this.random.pick(organizations);
      const answer = await getWith(
        replica.apiUrl('/orders?limit=200'),
        { authorization: `Bearer ${this.world.permanentKey(org)}` },
        3000,
      );
      const token = answer?.headers['x-read-position'];
      if (answer?.status !== 200 || typeof token !== 'string') {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const next = parsePositionToken(token)?.get(this.topicId) ?? [];
      const ids = (answer.body as { data: { id: number }[] }).data.map((order) => order.id);
      this.pending.push({ replica: replica.name, next, ids });
      if (this.pending.length > maxPending) {
        this.pending.shift();
        this.counts.undecided += 1;
      }
    }
  }

  /** Decides every pending answer whose token the topic has been read up to. */
  private decide(): void {
    this.pending = this.pending.filter((answer) => {
      const readUpTo = (partition: number): boolean =>
        (this.read[partition] ?? 0) >= (answer.next[partition] ?? 0);
      const partitions = Math.max(this.read.length, answer.next.length);
      if (!Array.from({ length: partitions }, (_, p) => p).every(readUpTo)) return true;
      for (const id of answer.ids) {
        const records = this.created.get(id) ?? [];
        if (!records.some((r) => r.offset < (answer.next[r.partition] ?? 0))) {
          const where = records.map((r) => `${r.partition}@${r.offset}`).join(',') || 'none read';
          this.invariants.violate(
            `page positions via ${answer.replica}`,
            'a page within its own position',
            `order ${id} (created at ${where}) in a page whose X-Read-Position says ${this.ordersTopic} was read up to ${JSON.stringify(answer.next)}`,
          );
          return false;
        }
      }
      this.counts.checked += 1;
      return false;
    });
  }
}

/** Publishing events the way the contract says (JSON value, keyed by order id or key id), in order per key. */
import type { KafkaPort } from './port.js';
import { type DomainEvent } from '../../schemas/events.js';
import { topicRoleOfType, type TopicRole } from '../../schemas/streams.js';

export function topicRoleOf(event: DomainEvent): TopicRole {
  const role = topicRoleOfType.get(event.type);
  if (role === undefined) throw new Error(`no topic carries ${event.type}`);
  return role;
}

export function messageKeyOf(event: DomainEvent): string {
  return 'key_id' in event.data ? event.data.key_id : String(event.data.order_id);
}

/** Buffers messages and sends them in batches, in order per topic; `flush` sends the rest. */
export class EventPublisher {
  private pending: { role: TopicRole; key: string; value: Buffer | string | null }[] = [];
  private pendingBytes = 0;
  published = 0;

  constructor(
    private readonly kafka: Pick<KafkaPort, 'publish'>,
    private readonly topics: Record<TopicRole, string>,
    private readonly batchSize = 5000,
    /** stays well under the broker's default 1 MiB limit for one request's record batch */
    private readonly batchBytes = 256 * 1024,
  ) {}

  add(event: DomainEvent): Promise<void> {
    return this.addMessage(topicRoleOf(event), messageKeyOf(event), JSON.stringify(event));
  }

  /** Any value, valid or not, on the topic of `role`. */
  async addMessage(role: TopicRole, key: string, value: Buffer | string | null): Promise<void> {
    this.pending.push({ role, key, value });
    this.pendingBytes += key.length + (value?.length ?? 0);
    if (this.pending.length >= this.batchSize || this.pendingBytes >= this.batchBytes) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const messages = this.pending.map(({ role, key, value }) => ({ topic: this.topics[role], key, value }));
    this.pending = [];
    this.pendingBytes = 0;
    await this.kafka.publish(messages);
    this.published += messages.length;
  }
}

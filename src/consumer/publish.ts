/** Publishing events the way the contract says (JSON value, keyed by order id or key id), in order per key. */
import type { Producer } from 'kafkajs';
import type { DomainEvent, TopicRole } from '../../schemas/events.js';

export function topicRoleOf(event: DomainEvent): TopicRole {
  switch (event.type) {
    case 'order.created':
    case 'order.updated':
    case 'order.deleted':
      return 'orders';
    case 'order.status_changed':
      return 'orderStatus';
    case 'article.published':
    case 'article.removed':
      return 'articles';
    case 'api_key.issued':
    case 'api_key.revoked':
      return 'apiKeys';
  }
}

export function messageKeyOf(event: DomainEvent): string {
  return 'key_id' in event.data ? event.data.key_id : String(event.data.order_id);
}

/** Buffers events and sends them in batches; `flush` sends the rest. */
export class EventPublisher {
  private pending: DomainEvent[] = [];
  published = 0;

  constructor(
    private readonly producer: Producer,
    private readonly topics: Record<TopicRole, string>,
    private readonly batchSize = 5000,
  ) {}

  async add(event: DomainEvent): Promise<void> {
    this.pending.push(event);
    if (this.pending.length >= this.batchSize) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const byTopic = new Map<string, { key: string; value: string }[]>();
    for (const event of this.pending) {
      const topic = this.topics[topicRoleOf(event)];
      const list = byTopic.get(topic) ?? [];
      list.push({ key: messageKeyOf(event), value: JSON.stringify(event) });
      byTopic.set(topic, list);
    }
    const count = this.pending.length;
    this.pending = [];
    await this.producer.sendBatch({
      acks: -1,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    this.published += count;
  }
}

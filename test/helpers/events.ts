/** Builders of contract-valid events for tests. Every field can be overridden. */
import type {
  ApiKeyIssued,
  ApiKeyRevoked,
  ArticlePublished,
  ArticleRemoved,
  OrderCreated,
  OrderDeleted,
  OrderStatusChanged,
  OrderUpdated,
} from '../../schemas/events.js';

let sequence = 0;
function nextEventId(): string {
  sequence += 1;
  return `evt-${String(sequence).padStart(8, '0')}`;
}

/** An RFC 3339 timestamp `minutes` after a fixed origin. */
export function at(minutes: number): string {
  return new Date(Date.UTC(2026, 10, 1, 9, 0, 0) + minutes * 60_000).toISOString();
}

interface Meta {
  event_id?: string;
  occurred_at?: string;
}

function meta(m: Meta, fallbackMinutes: number): { event_id: string; occurred_at: string } {
  return { event_id: m.event_id ?? nextEventId(), occurred_at: m.occurred_at ?? at(fallbackMinutes) };
}

export function orderCreated(
  data: Partial<OrderCreated['data']> & { order_id: number },
  m: Meta = {},
): OrderCreated {
  return {
    ...meta(m, 0),
    type: 'order.created',
    data: {
      organization_id: 1,
      member_id: 10,
      press_release_title: `Press release ${data.order_id}`,
      status: 'publishing',
      distribution_date: null,
      created_at: m.occurred_at ?? at(0),
      ...data,
    },
  };
}

export function orderUpdated(data: OrderUpdated['data'], m: Meta = {}): OrderUpdated {
  return { ...meta(m, 1), type: 'order.updated', data };
}

export function orderDeleted(orderId: number, m: Meta = {}): OrderDeleted {
  return { ...meta(m, 2), type: 'order.deleted', data: { order_id: orderId } };
}

export function statusChanged(orderId: number, status: string, m: Meta = {}): OrderStatusChanged {
  return { ...meta(m, 1), type: 'order.status_changed', data: { order_id: orderId, status } };
}

export function articlePublished(
  data: Partial<ArticlePublished['data']> & { article_id: number; order_id: number },
  m: Meta = {},
): ArticlePublished {
  return {
    ...meta(m, 1),
    type: 'article.published',
    data: {
      article_url: `https://www.news-${data.article_id}.example/story/${data.article_id}`,
      published_at: m.occurred_at ?? at(1),
      ...data,
    },
  };
}

export function articleRemoved(articleId: number, orderId: number, m: Meta = {}): ArticleRemoved {
  return { ...meta(m, 2), type: 'article.removed', data: { article_id: articleId, order_id: orderId } };
}

export function apiKeyIssued(
  keyId: string,
  organizationId: number,
  keySha256: string,
  m: Meta = {},
): ApiKeyIssued {
  return {
    ...meta(m, 0),
    type: 'api_key.issued',
    data: { key_id: keyId, organization_id: organizationId, key_sha256: keySha256 },
  };
}

export function apiKeyRevoked(keyId: string, m: Meta = {}): ApiKeyRevoked {
  return { ...meta(m, 1), type: 'api_key.revoked', data: { key_id: keyId } };
}

/** The topic role and Kafka key of an event, as the service's publisher computes them. */
export { topicRoleOf as roleOf, messageKeyOf as keyOf } from '../../src/kafka/publisher.js';

/**
 * The event contract between the upstream distribution system and this read
 * model (docs/events.md). These zod schemas are the authoritative form;
 * `events.schema.json` is generated from them for the publisher.
 */
import { z } from 'zod';

/** JSON integers above 2^53 lose precision in every JSON parser; reject them rather than mangle them. */
const entityId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in epoch milliseconds: the API prints four-digit years. */
const utcYears = { from: -62_167_219_200_000, to: 253_402_300_800_000 };

/**
 * RFC 3339 with a zone designator (`Z` or `±hh:mm`), any number of fractional digits (compared up to
 * nanoseconds), within the years 0000–9999 once converted to UTC.
 */
/** The format's own pattern (zod's), for the years rule's shortcut below. */
const rfc3339Pattern = z.core.regexes.datetime({ offset: true, local: false, precision: null });

const timestamp = z.iso
  .datetime({ offset: true })
  .refine(
    (value) => {
      // Zod runs this rule on every string, the format's rejects too. Within the format, offsets are
      // at most ±23:59, so only the years 0000 and 9999 can leave the range once converted to UTC:
      // any other year needs no parse (a cost on every event). Anything else is parsed as always.
      if (!value.startsWith('0000') && !value.startsWith('9999') && rfc3339Pattern.test(value)) return true;
      const ms = Date.parse(value);
      return ms >= utcYears.from && ms < utcYears.to;
    },
    { message: 'must fall within the years 0000–9999 once converted to UTC' },
  )
  .meta({
    description:
      'RFC 3339 with `Z` or `±hh:mm`, any number of fractional digits (compared up to nanoseconds); within the years 0000–9999 once converted to UTC',
  });

/** Internal order status. Any string is valid; the length cap keeps one bad value from bloating the model. */
const internalStatus = z.string().min(1).max(100);

const httpUrl = z.url({ protocol: /^https?$/ }).max(2048);

export const OrderCreatedData = z.object({
  order_id: entityId,
  organization_id: entityId,
  member_id: entityId,
  press_release_title: z.string().min(1).max(1000),
  status: internalStatus,
  distribution_date: timestamp.nullable(),
  created_at: timestamp,
});

export const OrderUpdatedData = z.object({
  order_id: entityId,
  press_release_title: z.string().min(1).max(1000).optional(),
  distribution_date: timestamp.nullable().optional(),
});

export const OrderDeletedData = z.object({ order_id: entityId });

export const OrderStatusChangedData = z.object({ order_id: entityId, status: internalStatus });

export const ArticlePublishedData = z.object({
  article_id: entityId,
  order_id: entityId,
  article_url: httpUrl,
  website_domain: z.string().min(1).max(253).optional(),
  published_at: timestamp,
});

export const ArticleRemovedData = z.object({ article_id: entityId, order_id: entityId });

export const ApiKeyIssuedData = z.object({
  key_id: z.string().min(1).max(100),
  organization_id: entityId,
  key_sha256: z.string().regex(/^[0-9a-f]{64}$/, 'SHA-256 as 64 lowercase hex characters'),
});

export const ApiKeyRevokedData = z.object({ key_id: z.string().min(1).max(100) });

const eventFields = {
  event_id: z.string().min(1).max(100),
  occurred_at: timestamp,
};

function eventOf<const T extends string, D extends z.ZodType>(type: T, data: D) {
  return z.object({ ...eventFields, type: z.literal(type), data });
}

export const OrderCreated = eventOf('order.created', OrderCreatedData);
export const OrderUpdated = eventOf('order.updated', OrderUpdatedData);
export const OrderDeleted = eventOf('order.deleted', OrderDeletedData);
export const OrderStatusChanged = eventOf('order.status_changed', OrderStatusChangedData);
export const ArticlePublished = eventOf('article.published', ArticlePublishedData);
export const ArticleRemoved = eventOf('article.removed', ArticleRemovedData);
export const ApiKeyIssued = eventOf('api_key.issued', ApiKeyIssuedData);
export const ApiKeyRevoked = eventOf('api_key.revoked', ApiKeyRevokedData);

export const DomainEvent = z.discriminatedUnion('type', [
  OrderCreated,
  OrderUpdated,
  OrderDeleted,
  OrderStatusChanged,
  ArticlePublished,
  ArticleRemoved,
  ApiKeyIssued,
  ApiKeyRevoked,
]);

export type OrderCreated = z.infer<typeof OrderCreated>;
export type OrderUpdated = z.infer<typeof OrderUpdated>;
export type OrderDeleted = z.infer<typeof OrderDeleted>;
export type OrderStatusChanged = z.infer<typeof OrderStatusChanged>;
export type ArticlePublished = z.infer<typeof ArticlePublished>;
export type ArticleRemoved = z.infer<typeof ArticleRemoved>;
export type ApiKeyIssued = z.infer<typeof ApiKeyIssued>;
export type ApiKeyRevoked = z.infer<typeof ApiKeyRevoked>;
export type DomainEvent = z.infer<typeof DomainEvent>;
export type EventType = DomainEvent['type'];

/** The first pass of decoding: enough to tell an unknown type from a malformed known one. */
export const EventEnvelope = z.object({
  ...eventFields,
  type: z.string().min(1).max(100),
  data: z.unknown(),
});

/** The `data` schema of each event type, for decoding a payload once its envelope is known to be valid. */
export const eventDataSchemas = {
  'order.created': OrderCreatedData,
  'order.updated': OrderUpdatedData,
  'order.deleted': OrderDeletedData,
  'order.status_changed': OrderStatusChangedData,
  'article.published': ArticlePublishedData,
  'article.removed': ArticleRemovedData,
  'api_key.issued': ApiKeyIssuedData,
  'api_key.revoked': ApiKeyRevokedData,
} as const satisfies Record<EventType, z.ZodType>;

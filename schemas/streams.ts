/**
 * The stream registry: every Kafka topic this service reads, declared once. Its role, default name,
 * variable, event types and store are read from here by everything else: the configuration and its
 * clash check (`schemas/config.ts`, `src/config.ts`), what each consumer subscribes to
 * (`src/projector/subscriptions.ts`), decoding (`src/projector/decode.ts`), `topics create`, and the
 * environments of tests, tools and benchmarks (`tools/service-env.ts`, `tools/harness.ts`).
 *
 * A new stream is one declaration here, its event schemas (`events.ts`), its rules and its table.
 * The compiler finds each `Record<TopicRole, …>` that must name it, and
 * `test/schemas/streams.unit.test.ts` fails when a declared stream is consumed by no consumer.
 */
import type { EventType } from './events.js';

/**
 * What a stream feeds: the orders model (built, rebuilt, replayed and switched as one file per
 * generation) or the keys store (one file that only moves forward).
 */
export type StoreName = 'orders' | 'keys';

export interface StreamDeclaration {
  /** the topic's name unless `variable` names another */
  defaultTopic: string;
  /** the environment variable that names its topic */
  variable: `TOPIC_${string}`;
  /** the event types it carries; each event type is carried by one stream */
  types: readonly [EventType, ...EventType[]];
  store: StoreName;
  /**
   * A consumer of several streams subscribes to them lowest rank first: a fetch fills its byte
   * budget in that order, so a small stream is not starved by a backlog of a large one.
   */
  fetchRank: number;
}

/** In this order the configuration, `topics create` and the clash check list them. */
export const streams = {
  orders: {
    defaultTopic: 'pr.orders',
    variable: 'TOPIC_ORDERS',
    types: ['order.created', 'order.updated', 'order.deleted'],
    store: 'orders',
    fetchRank: 2,
  },
  orderStatus: {
    defaultTopic: 'pr.order-status',
    variable: 'TOPIC_ORDER_STATUS',
    types: ['order.status_changed'],
    store: 'orders',
    fetchRank: 1,
  },
  articles: {
    defaultTopic: 'pr.articles',
    variable: 'TOPIC_ARTICLES',
    types: ['article.published', 'article.removed'],
    store: 'orders',
    fetchRank: 3,
  },
  apiKeys: {
    defaultTopic: 'pr.api-keys',
    variable: 'TOPIC_API_KEYS',
    types: ['api_key.issued', 'api_key.revoked'],
    store: 'keys',
    fetchRank: 0,
  },
} as const satisfies Record<string, StreamDeclaration>;

/** A stream's role: what its topic carries. Topic names are configurable; their roles are not. */
export type TopicRole = keyof typeof streams;

/** The variable of each stream, as the configuration's schema reads it. */
export type TopicVariable = (typeof streams)[TopicRole]['variable'];

/** Every event type is carried by a stream: an event type left out of every declaration does not compile. */
type Uncarried = Exclude<EventType, (typeof streams)[TopicRole]['types'][number]>;
export const everyEventTypeCarried: [Uncarried] extends [never] ? true : Uncarried = true;

/** Every role, in declaration order. */
export const streamRoles = Object.keys(streams) as TopicRole[];

/** A value for each stream, in declaration order. */
export function perStream<T>(value: (role: TopicRole) => T): Record<TopicRole, T> {
  return Object.fromEntries(streamRoles.map((role) => [role, value(role)])) as Record<TopicRole, T>;
}

/** `roles` in the order a consumer subscribes to them (`fetchRank`). */
export function inFetchOrder(roles: readonly TopicRole[]): TopicRole[] {
  return [...roles].sort((a, b) => streams[a].fetchRank - streams[b].fetchRank);
}

/** The streams that feed `store`, in declaration order. */
export function rolesOfStore(store: StoreName): TopicRole[] {
  return streamRoles.filter((role) => streams[role].store === store);
}

/** The topics an orders model is built from, in fetch order; the keys topic feeds the keys store alone. */
export const orderModelRoles: readonly TopicRole[] = inFetchOrder(rolesOfStore('orders'));

/** What each topic carries. */
export const topicRoles = perStream((role): readonly EventType[] => streams[role].types);

export const defaultTopicNames = perStream((role) => streams[role].defaultTopic);

/** The topic role that carries each event type: `topicRoles` read the other way. */
export const topicRoleOfType: ReadonlyMap<string, TopicRole> = new Map(
  streamRoles.flatMap((role) => streams[role].types.map((type) => [type, role] as const)),
);

/** The `TOPIC_*` variables that name `topics`, for starting the service on them. */
export function topicVariables(topics: Record<TopicRole, string>): Record<TopicVariable, string> {
  return Object.fromEntries(streamRoles.map((role) => [streams[role].variable, topics[role]])) as Record<
    TopicVariable,
    string
  >;
}

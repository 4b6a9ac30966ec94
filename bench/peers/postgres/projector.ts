/**
 * The peer's consumer: kafkajs, one PostgreSQL transaction per batch holding the batch's upserts and
 * its partition's next offset. A batch is first reduced in memory to the newest fact per entity and
 * field group (last writer wins per group, EVENTS.md), then written with one multi-row upsert per
 * table whose updates only take a group when its fact is newer than the stored one: any interleaving
 * and any redelivery ends in the same rows.
 */
import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Pool, PoolClient } from 'pg';
import { z } from 'zod';
import { DomainEvent } from '../../../schemas/events.js';
import { topicRoleOfType, type TopicRole } from '../../../schemas/streams.js';
import type { PeerDesign } from './schema.js';

/** A fact's place in "last writer wins": occurred_at to the nanosecond, removals first on ties, event id. */
interface Version {
  ms: number;
  sub: number;
  rank: 0 | 1;
  id: string;
}

function compare(a: Version, b: Version): number {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  if (a.sub !== b.sub) return a.sub < b.sub ? -1 : 1;
  if (a.rank !== b.rank) return a.rank - b.rank;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** An RFC 3339 instant as epoch milliseconds and the nanoseconds within that millisecond. */
function instant(rfc3339: string): { ms: number; sub: number } {
  const fraction = /\.(\d+)/.exec(rfc3339)?.[1] ?? '';
  return { ms: Date.parse(rfc3339), sub: Number(fraction.slice(3, 9).padEnd(6, '0')) };
}

function versionOf(event: DomainEvent, rank: 0 | 1 = 0): Version {
  return { ...instant(event.occurred_at), rank, id: event.event_id };
}

type OrderGroup = 'created' | 'title' | 'distribution' | 'status' | 'deleted';

/** The columns each field group of an order sets, besides its version. */
const orderGroupColumns: Record<OrderGroup, readonly { name: string; type: string }[]> = {
  created: [
    { name: 'org_id', type: 'bigint' },
    { name: 'member_id', type: 'bigint' },
    { name: 'created_ms', type: 'bigint' },
    { name: 'created_sub', type: 'integer' },
  ],
  title: [{ name: 'title', type: 'text' }],
  distribution: [{ name: 'distribution_ms', type: 'bigint' }],
  status: [{ name: 'status', type: 'text' }],
  deleted: [],
};
const orderGroups = Object.keys(orderGroupColumns) as OrderGroup[];

type Value = number | string | boolean | null;

/** The newest fact of the batch per field group of one order. */
type OrderPatch = Partial<Record<OrderGroup, { v: Version; values: readonly Value[] }>>;

interface EntityFact {
  v: Version;
  values: readonly Value[];
}

/** What a batch changes, reduced: the newest fact per entity (and per field group of an order). */
export interface ReducedBatch {
  orders: Map<number, OrderPatch>;
  articles: Map<number, EntityFact>;
  apiKeys: Map<string, EntityFact>;
  deadLetters: { offset: string; key: Buffer | null; value: Buffer | null; reason: string }[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const parseEvent = z.compile(DomainEvent);

function decode(role: TopicRole, value: Buffer | null): DomainEvent | string {
  if (value === null || value.length === 0) return 'empty_value';
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(value));
  } catch {
    return 'invalid_json';
  }
  const parsed = parseEvent.safeParse(json);
  if (!parsed.success) return 'invalid_event';
  return topicRoleOfType.get(parsed.data.type) === role ? parsed.data : 'wrong_topic';
}

function keepNewer<K>(map: Map<K, EntityFact>, key: K, fact: EntityFact): void {
  const current = map.get(key);
  if (current === undefined || compare(fact.v, current.v) > 0) map.set(key, fact);
}

function patchOrder(
  batch: ReducedBatch,
  orderId: number,
  v: Version,
  group: OrderGroup,
  values: Value[],
): void {
  let patch = batch.orders.get(orderId);
  if (patch === undefined) {
    patch = {};
    batch.orders.set(orderId, patch);
  }
  const current = patch[group];
  if (current === undefined || compare(v, current.v) > 0) patch[group] = { v, values };
}

function websiteDomainOf(articleUrl: string): string {
  return new URL(articleUrl).hostname.replace(/^www\./, '');
}

export function reduceBatch(role: TopicRole, messages: readonly KafkaMessage[]): ReducedBatch {
  const batch: ReducedBatch = { orders: new Map(), articles: new Map(), apiKeys: new Map(), deadLetters: [] };
  for (const message of messages) {
    const event = decode(role, message.value);
    if (typeof event === 'string') {
      batch.deadLetters.push({
        offset: message.offset,
        key: message.key,
        value: message.value,
        reason: event,
      });
      continue;
    }
    const v = versionOf(event);
    switch (event.type) {
      case 'order.created': {
        const d = event.data;
        const created = instant(d.created_at);
        patchOrder(batch, d.order_id, v, 'created', [
          d.organization_id,
          d.member_id,
          created.ms,
          created.sub,
        ]);
        patchOrder(batch, d.order_id, v, 'title', [d.press_release_title]);
        const distribution = d.distribution_date === null ? null : Date.parse(d.distribution_date);
        patchOrder(batch, d.order_id, v, 'distribution', [distribution]);
        patchOrder(batch, d.order_id, v, 'status', [d.status]);
        break;
      }
      case 'order.updated': {
        const d = event.data;
        if (d.press_release_title !== undefined)
          patchOrder(batch, d.order_id, v, 'title', [d.press_release_title]);
        if (d.distribution_date !== undefined) {
          const distribution = d.distribution_date === null ? null : Date.parse(d.distribution_date);
          patchOrder(batch, d.order_id, v, 'distribution', [distribution]);
        }
        break;
      }
      case 'order.deleted':
        patchOrder(batch, event.data.order_id, v, 'deleted', []);
        break;
      case 'order.status_changed':
        patchOrder(batch, event.data.order_id, v, 'status', [event.data.status]);
        break;
      case 'article.published': {
        const d = event.data;
        keepNewer(batch.articles, d.article_id, {
          v,
          values: [
            d.order_id,
            d.article_url,
            d.website_domain ?? websiteDomainOf(d.article_url),
            Date.parse(d.published_at),
            false,
          ],
        });
        break;
      }
      case 'article.removed':
        keepNewer(batch.articles, event.data.article_id, {
          v: versionOf(event, 1),
          values: [event.data.order_id, null, null, null, true],
        });
        break;
      case 'api_key.issued':
        keepNewer(batch.apiKeys, event.data.key_id, {
          v,
          values: [event.data.organization_id, event.data.key_sha256, false],
        });
        break;
      case 'api_key.revoked':
        keepNewer(batch.apiKeys, event.data.key_id, {
          v: versionOf(event, 1),
          values: [null, null, true],
        });
        break;
      default: {
        const unhandled: never = event;
        throw new Error(`unhandled event ${JSON.stringify(unhandled)}`);
      }
    }
  }
  return batch;
}

/** `(a, b, c) > (x, y, z)` of a group's stored version and the incoming one, NULL-safe. */
function newer(prefix: string): string {
  return `(excluded.${prefix}_ms IS NOT NULL AND (o.${prefix}_ms IS NULL OR (excluded.${prefix}_ms, excluded.${prefix}_sub, excluded.${prefix}_id) > (o.${prefix}_ms, o.${prefix}_sub, o.${prefix}_id)))`;
}

interface Column {
  name: string;
  type: string;
}

const orderColumns: Column[] = [
  { name: 'order_id', type: 'bigint' },
  ...orderGroups.flatMap((g) => [
    ...orderGroupColumns[g],
    { name: `${g}_v_ms`, type: 'bigint' },
    { name: `${g}_v_sub`, type: 'integer' },
    { name: `${g}_v_id`, type: 'text' },
  ]),
];

const unnest = (columns: readonly Column[]): string =>
  `SELECT * FROM unnest(${columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`;

/** One upsert for all the orders of a batch: each group is taken only when its fact is newer. */
const upsertOrdersSql = `INSERT INTO orders AS o (${orderColumns.map((c) => c.name).join(', ')})
  ${unnest(orderColumns)}
  ON CONFLICT (order_id) DO UPDATE SET ${orderGroups
    .flatMap((g) =>
      [...orderGroupColumns[g].map((c) => c.name), `${g}_v_ms`, `${g}_v_sub`, `${g}_v_id`].map(
        (c) => `${c} = CASE WHEN ${newer(`${g}_v`)} THEN excluded.${c} ELSE o.${c} END`,
      ),
    )
    .join(',\n    ')}
  WHERE ${orderGroups.map((g) => newer(`${g}_v`)).join(' OR ')}`;

/**
 * The same upsert, and in the same statement the listed orders per organization and status: each
 * changed row takes one from its old (organization, listed status) and adds one to its new one
 * (PostgreSQL 18's `RETURNING old.*, new.*`; an inserted row's old values are NULL). Counters are
 * written in key order, as the rows are, so that concurrent batches lock them in the same order.
 */
const upsertOrdersCountedSql = `WITH changed AS (
  ${upsertOrdersSql}
  RETURNING old.org_id AS old_org, old.listed_status AS old_status, new.org_id AS new_org, new.listed_status AS new_status
), deltas AS (
  SELECT org_id, listed_status, sum(d) AS d FROM (
    SELECT old_org, old_status, -1 FROM changed WHERE old_status IS NOT NULL
    UNION ALL SELECT new_org, new_status, 1 FROM changed WHERE new_status IS NOT NULL
  ) AS x (org_id, listed_status, d)
  GROUP BY org_id, listed_status HAVING sum(d) <> 0
)
INSERT INTO org_order_counts AS c (org_id, listed_status, n)
  SELECT org_id, listed_status, d FROM deltas ORDER BY org_id, listed_status
  ON CONFLICT (org_id, listed_status) DO UPDATE SET n = c.n + excluded.n`;

const versionColumns: Column[] = [
  { name: 'v_ms', type: 'bigint' },
  { name: 'v_sub', type: 'integer' },
  { name: 'v_rank', type: 'smallint' },
  { name: 'v_id', type: 'text' },
];

/** One upsert of whole rows that replaces a row only with a newer fact. */
function upsertLatestSql(table: string, key: Column, fields: readonly Column[]): string {
  const columns = [key, ...fields, ...versionColumns];
  return `INSERT INTO ${table} AS o (${columns.map((c) => c.name).join(', ')})
  ${unnest(columns)}
  ON CONFLICT (${key.name}) DO UPDATE SET ${[...fields, ...versionColumns].map((c) => `${c.name} = excluded.${c.name}`).join(', ')}
  WHERE (excluded.v_ms, excluded.v_sub, excluded.v_rank, excluded.v_id) > (o.v_ms, o.v_sub, o.v_rank, o.v_id)`;
}

const upsertArticlesSql = upsertLatestSql('articles', { name: 'article_id', type: 'bigint' }, [
  { name: 'order_id', type: 'bigint' },
  { name: 'article_url', type: 'text' },
  { name: 'website_domain', type: 'text' },
  { name: 'published_ms', type: 'bigint' },
  { name: 'removed', type: 'boolean' },
]);

const upsertApiKeysSql = upsertLatestSql('api_keys', { name: 'key_id', type: 'text' }, [
  { name: 'org_id', type: 'bigint' },
  { name: 'key_sha256', type: 'text' },
  { name: 'revoked', type: 'boolean' },
]);

const upsertOffsetSql = `INSERT INTO consumer_offsets (topic, partition, next_offset) VALUES ($1, $2, $3)
  ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset`;

const insertDeadLettersSql = `INSERT INTO dead_letters (topic, partition, "offset", message_key, raw_value, reason)
  SELECT $1, $2, * FROM unnest($3::bigint[], $4::bytea[], $5::bytea[], $6::text[]) ON CONFLICT DO NOTHING`;

/** Rows as columns, in ascending key order (concurrent batches then lock shared rows in the same order). */
function columnsOf<K extends number | string>(
  rows: Map<K, EntityFact>,
  width: number,
): { keys: K[]; columns: Value[][] } {
  const keys = [...rows.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const columns: Value[][] = Array.from({ length: width + 4 }, () => []);
  for (const key of keys) {
    const fact = rows.get(key)!;
    fact.values.forEach((value, i) => columns[i]!.push(value));
    columns[width]!.push(fact.v.ms);
    columns[width + 1]!.push(fact.v.sub);
    columns[width + 2]!.push(fact.v.rank);
    columns[width + 3]!.push(fact.v.id);
  }
  return { keys, columns };
}

function orderParameters(orders: Map<number, OrderPatch>): Value[][] {
  const ids = [...orders.keys()].sort((a, b) => a - b);
  const columns: Value[][] = orderColumns.map(() => []);
  for (const id of ids) {
    const patch = orders.get(id)!;
    let i = 0;
    columns[i++]!.push(id);
    for (const group of orderGroups) {
      const fact = patch[group];
      for (let c = 0; c < orderGroupColumns[group].length; c += 1)
        columns[i++]!.push(fact?.values[c] ?? null);
      columns[i++]!.push(fact?.v.ms ?? null);
      columns[i++]!.push(fact?.v.sub ?? null);
      columns[i++]!.push(fact?.v.id ?? null);
    }
  }
  return columns;
}

/** Writes a reduced batch and its partition's next offset in the transaction of `client`. */
export async function writeBatch(
  client: PoolClient,
  design: PeerDesign,
  topic: string,
  partition: number,
  nextOffset: string,
  batch: ReducedBatch,
): Promise<void> {
  if (batch.orders.size > 0)
    await client.query(
      design === 'naive'
        ? { name: 'peer-upsert-orders', text: upsertOrdersSql, values: orderParameters(batch.orders) }
        : {
            name: 'peer-upsert-orders-counted',
            text: upsertOrdersCountedSql,
            values: orderParameters(batch.orders),
          },
    );
  if (batch.articles.size > 0) {
    const { keys, columns } = columnsOf(batch.articles, 5);
    await client.query({ name: 'peer-upsert-articles', text: upsertArticlesSql, values: [keys, ...columns] });
  }
  if (batch.apiKeys.size > 0) {
    const { keys, columns } = columnsOf(batch.apiKeys, 3);
    await client.query({ name: 'peer-upsert-keys', text: upsertApiKeysSql, values: [keys, ...columns] });
  }
  if (batch.deadLetters.length > 0) {
    const d = batch.deadLetters;
    await client.query(insertDeadLettersSql, [
      topic,
      partition,
      d.map((l) => l.offset),
      d.map((l) => l.key),
      d.map((l) => l.value?.subarray(0, 1000) ?? null),
      d.map((l) => l.reason),
    ]);
  }
  await client.query({
    name: 'peer-upsert-offset',
    text: upsertOffsetSql,
    values: [topic, partition, nextOffset],
  });
}

/** Runs `work` in a transaction, again when PostgreSQL ends it as a deadlock or serialization victim. */
async function inTransaction(pool: Pool, work: (client: PoolClient) => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await work(client);
      await client.query('COMMIT');
      return;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || (code !== '40P01' && code !== '40001')) throw error;
    } finally {
      client.release();
    }
  }
}

export interface PeerProjectorOptions {
  kafka: Kafka;
  pool: Pool;
  topics: Record<TopicRole, string>;
  groupId: string;
  /** batches of different partitions written at the same time, each on its own connection */
  partitionsConcurrently: number;
  design: PeerDesign;
  /** after each batch's commit, with what the batch changed */
  committed?: (batch: ReducedBatch) => void;
}

/** Starts consuming from the offsets stored in PostgreSQL (the start of each topic when none is). */
export async function startPeerProjector(options: PeerProjectorOptions): Promise<Consumer> {
  const { kafka, pool, topics } = options;
  const roleOf = new Map(Object.entries(topics).map(([role, topic]) => [topic, role as TopicRole]));
  const stored = (
    await pool.query<{ topic: string; partition: number; next_offset: string }>(
      'SELECT topic, partition, next_offset FROM consumer_offsets',
    )
  ).rows.filter((row) => roleOf.has(row.topic));
  const consumer = kafka.consumer({ groupId: options.groupId, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: Object.values(topics), fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: options.partitionsConcurrently,
    eachBatch: async (payload) => {
      const { batch } = payload;
      if (batch.messages.length === 0) return;
      const role = roleOf.get(batch.topic)!;
      const reduced = reduceBatch(role, batch.messages);
      const last = batch.messages[batch.messages.length - 1]!.offset;
      const next = String(BigInt(last) + 1n);
      await inTransaction(pool, (client) =>
        writeBatch(client, options.design, batch.topic, batch.partition, next, reduced),
      );
      options.committed?.(reduced);
      payload.resolveOffset(last);
      await payload.heartbeat();
    },
  });
  // PostgreSQL's offsets are the truth; the group's own commits are advisory.
  for (const row of stored)
    consumer.seek({ topic: row.topic, partition: row.partition, offset: row.next_offset });
  return consumer;
}

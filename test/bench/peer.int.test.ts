/**
 * The PostgreSQL peers of bench:peer (bench/peers/postgres, naive and competent designs) on a tiny
 * data set through the real broker: each converges to the service's answers, facts that test the
 * convergence rules included (the competent one's kept counts and cached keys with them), and the
 * check that guards the benchmark's timings reports an answer that differs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Partitioners, type Kafka } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { sampleSourceOf } from '../../bench/peer.js';
import {
  benchKeyOf,
  createBenchTopics,
  endOffsetsVia,
  kafkaOf,
  publishBenchData,
  startServiceProcess,
  waitUntil,
  type BenchData,
} from '../../bench/lib.js';
import {
  answerOf,
  assertSameAnswers,
  compareAnswers,
  differences,
  sampleRequests,
  type Answer,
} from '../../bench/peers/compare.js';
import { peerAppliedMessages, startPeerProcess } from '../../bench/peers/postgres/process.js';
import { peerDesigns } from '../../bench/peers/postgres/schema.js';
import { servingSettings, startPeerPostgres } from '../../bench/peers/postgres/server.js';
import type { DomainEvent } from '../../schemas/events.js';
import { topicRoleOfType, type TopicRole } from '../../schemas/streams.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { appliedMessages, topicEndOffsets } from '../../tools/model-progress.js';

async function publish(
  kafka: Kafka,
  topics: Record<TopicRole, string>,
  events: DomainEvent[],
): Promise<void> {
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  for (const event of events) {
    const key = 'order_id' in event.data ? String(event.data.order_id) : event.data.key_id;
    await producer.send({
      topic: topics[topicRoleOfType.get(event.type)!],
      messages: [{ key, value: JSON.stringify(event) }],
    });
  }
  await producer.disconnect();
}

const created = (
  orderId: number,
  org: number,
  at: string,
  createdAt: string,
  status: string,
): DomainEvent => ({
  event_id: `peer-test-created-${orderId}-${at}`,
  type: 'order.created',
  occurred_at: at,
  data: {
    order_id: orderId,
    organization_id: org,
    member_id: org * 100,
    press_release_title: `Peer test #${orderId}`,
    status,
    distribution_date: null,
    created_at: createdAt,
  },
});

/** Facts for the convergence rules of docs/events.md, beside the seeded data set's (orders 1–300). */
function convergenceFacts(removedArticle: { article_id: number; order_id: number }): DomainEvent[] {
  return [
    // a deletion after everything: order 1 disappears
    {
      event_id: 'peer-test-del-1',
      type: 'order.deleted',
      occurred_at: '2027-01-01T00:00:00Z',
      data: { order_id: 1 },
    },
    // deleted, then created again later: listed again, with its articles
    {
      event_id: 'peer-test-del-2',
      type: 'order.deleted',
      occurred_at: '2027-01-01T00:00:00Z',
      data: { order_id: 2 },
    },
    created(2, 1, '2027-02-01T00:00:00Z', '2026-03-01T00:00:00Z', 'finished'),
    // an older title arriving late changes nothing; a newer one does
    {
      event_id: 'peer-test-old-title-3',
      type: 'order.updated',
      occurred_at: '2020-01-01T00:00:00Z',
      data: { order_id: 3, press_release_title: 'Too old to show' },
    },
    {
      event_id: 'peer-test-new-title-4',
      type: 'order.updated',
      occurred_at: '2027-01-01T00:00:00.000000001Z',
      data: { order_id: 4, press_release_title: 'Retitled "with quotes" ✓' },
    },
    // an article removed
    {
      event_id: 'peer-test-removed',
      type: 'article.removed',
      occurred_at: '2027-01-01T00:00:00Z',
      data: removedArticle,
    },
    // a status before its order; the order created later with an older status
    {
      event_id: 'peer-test-status-first',
      type: 'order.status_changed',
      occurred_at: '2026-06-02T00:00:00Z',
      data: { order_id: 100000, status: 'publishing' },
    },
    created(100000, 2, '2026-06-01T00:00:00Z', '2026-06-01T00:00:00Z', 'pending'),
    // created in the same millisecond, a nanosecond apart, and at the same instant: newest first, then by id
    created(100001, 2, '2026-06-01T00:00:00Z', '2026-06-01T00:00:00.000000001Z', 'finished'),
    created(100002, 2, '2026-06-01T00:00:00Z', '2026-06-01T00:00:00.000000002Z', 'finished'),
    created(100003, 2, '2026-06-01T00:00:00Z', '2026-06-01T00:00:00.000000002Z', 'finished'),
    // the same fact again (redelivery)
    created(100001, 2, '2026-06-01T00:00:00Z', '2026-06-01T00:00:00.000000001Z', 'finished'),
    // the last keyed organization's key revoked: 401 on both sides
    {
      event_id: 'peer-test-revoke',
      type: 'api_key.revoked',
      occurred_at: '2027-01-01T00:00:00Z',
      data: { key_id: 'bench-10' },
    },
  ];
}

describe('PostgreSQL peer (bench/peers)', () => {
  it.each(peerDesigns)(
    '%s: answers every sample request as the service does after the same facts, and the check reports an altered answer',
    async (design) => {
      const brokers = inject('kafkaBrokers');
      const kafka = kafkaOf(brokers);
      const topics = await createBenchTopics(kafka, `peer-test-${Date.now()}`);
      const data: BenchData = { orders: 300, organizations: 10, largeOrganizationOrders: 60, seed: 3 };
      await publishBenchData(kafka, topics, data);
      const dir = mkdtempSync(join(tmpdir(), 'peer-test-'));
      const dataDir = join(dir, 'data');
      const postgres = await startPeerPostgres(design === 'naive' ? {} : servingSettings(64 * 2 ** 20));
      const service = await startServiceProcess(brokers, topics, dataDir);
      try {
        await postgres.createDatabase('orders_peer');
        const peer = await startPeerProcess({
          postgres,
          database: 'orders_peer',
          brokers,
          topics,
          groupId: `peer-test-${Date.now()}`,
          runtime: 'source',
          design,
        });
        try {
          const caughtUp = async (): Promise<void> => {
            const total = await topicEndOffsets(endOffsetsVia(kafka), Object.values(topics));
            await waitUntil('the service has caught up', () => appliedMessages(dataDir) >= total, 30_000);
            await waitUntil(
              'the peer has caught up',
              async () => (await peerAppliedMessages(postgres, 'orders_peer')) >= total,
              30_000,
            );
          };
          await caughtUp();
          const modelFile = new ModelFiles(dataDir).currentFile()!;
          const model = new Database(modelFile, { readonly: true });
          const removedArticle = model
            .prepare('SELECT article_id, order_id FROM articles WHERE order_id = 5 AND removed = 0 LIMIT 1')
            .get() as { article_id: number; order_id: number } | undefined;
          model.close();
          // the key revoked below answers before its revocation (and a key cache holds it then)
          const beforeRevocation = await answerOf(peer.origin, {
            path: '/api/external-api/v1/orders?limit=1',
            authorization: `Bearer ${benchKeyOf(10)}`,
          });
          expect(beforeRevocation.status).toBe(200);
          await publish(kafka, topics, convergenceFacts(removedArticle ?? { article_id: 11, order_id: 5 }));
          await caughtUp();

          const requests = sampleRequests(sampleSourceOf(modelFile, data));
          const compared = await compareAnswers(
            `http://127.0.0.1:${service.httpPort}`,
            peer.origin,
            requests,
          );
          expect(compared.differences).toEqual([]);
          expect(() => assertSameAnswers(requests, compared.differences)).not.toThrow();
          // the facts above took effect on both sides
          const org2 = await answerOf(peer.origin, {
            path: '/api/external-api/v1/orders?limit=200',
            authorization: `Bearer ${benchKeyOf(2)}`,
          });
          const ids = (org2.body as { data: { id: number; order_status: string }[] }).data.map((o) => o.id);
          expect(ids.indexOf(100002)).toBeLessThan(ids.indexOf(100001));
          expect(ids.indexOf(100003)).toBe(ids.indexOf(100002) - 1);
          expect(ids).toContain(100000);

          // the competent design reaches its server over the Unix socket (client_port -1), the naive over TCP
          const transports = await postgres.query<{ socket: boolean }>(
            'orders_peer',
            `SELECT DISTINCT client_port < 0 AS socket FROM pg_stat_activity
            WHERE datname = 'orders_peer' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
          );
          expect(transports.map((row) => row.socket)).toEqual([design === 'competent']);

          // one answer altered: one title of one page
          const page = compared.peer.findIndex(
            (a) =>
              a.status === 200 &&
              ((a.body as { data?: unknown[] }).data?.length ?? 0) > 0 &&
              'total' in (a.body as object),
          );
          const altered: Answer[] = compared.peer.map((answer, i) =>
            i === page ? { ...answer, body: structuredClone(answer.body) } : answer,
          );
          (altered[page]!.body as { data: { press_release_title: string }[] }).data[0]!.press_release_title +=
            ' ';
          const found = differences(requests, compared.service, altered);
          expect(found).toHaveLength(1);
          expect(found[0]).toContain(requests[page]!.path);
          expect(() => assertSameAnswers(requests, found)).toThrow(
            /answer 1 of \d+ sample requests differently/,
          );
          // a status code alone differs
          const recoded = compared.peer.map((answer, i) => (i === 0 ? { ...answer, status: 500 } : answer));
          expect(differences(requests, compared.service, recoded)).toHaveLength(1);
        } finally {
          await peer.stop();
        }
      } finally {
        await service.stop();
        await postgres.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    90_000,
  );
});

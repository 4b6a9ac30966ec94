/**
 * An upstream that publishes with a transactional (exactly-once) producer leaves a commit marker
 * after each transaction, and an aborted transaction leaves messages no committed reader sees.
 * Positions come from the client, so the model still reaches the end offsets.
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Partitioners } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { messageKeyOf, topicRoleOf } from '../../src/kafka/publisher.js';
import { rebuildModel } from '../../src/projector/rebuild.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { testKafka, waitUntil } from '../helpers/kafka.js';
import { dumpModel } from '../helpers/read-model.js';
import { serviceFixture } from '../helpers/service.js';
import type { DomainEvent } from '../../schemas/events.js';

describe('a transactional upstream producer', () => {
  it('leaves lag 0, readiness, no restart, and a rebuild that finishes equal to the live model; aborted messages are not applied', async () => {
    const fixture = await serviceFixture({
      orders: 0,
      env: { STALL_TIMEOUT_MS: '2000', LAG_CHECK_INTERVAL_MS: '200' },
    });
    const producer = testKafka('transactional').producer({
      transactionalId: `tx-${randomUUID()}`,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    const inTransaction = async (events: DomainEvent[], outcome: 'commit' | 'abort'): Promise<void> => {
      const transaction = await producer.transaction();
      for (const event of events) {
        await transaction.send({
          topic: fixture.topics[topicRoleOf(event)],
          messages: [{ key: messageKeyOf(event), value: JSON.stringify(event) }],
        });
      }
      await (outcome === 'commit' ? transaction.commit() : transaction.abort());
    };
    await inTransaction([issueKeyOf(1)], 'commit');
    for (let id = 1; id <= 30; id += 1) {
      await inTransaction(
        [orderCreated({ order_id: id, organization_id: 1 }, { occurred_at: at(id) })],
        'commit',
      );
      if (id === 15) {
        await inTransaction(
          [orderCreated({ order_id: 999, organization_id: 1 }, { occurred_at: at(999) })],
          'abort',
        );
      }
    }
    await producer.disconnect();

    const service = await fixture.start();
    await waitUntil(
      'ready',
      async () => (await fetch(fixture.adminUrl(service, '/readyz'))).status === 200,
      60_000,
    );
    // Longer than the stall timeout: a model one short of the end would now be restarted and unready.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const readyz = await fetch(fixture.adminUrl(service, '/readyz'));
    const report = (await readyz.json()) as {
      totalLag: number;
      partitions: { lag: number }[];
      state: string;
    };
    expect(readyz.status).toBe(200);
    expect(report.totalLag).toBe(0);
    expect(report.state).toBe('live');
    const metrics = await (await fetch(fixture.adminUrl(service, '/metrics'))).text();
    expect(metrics).not.toMatch(/^orders_read_model_consumer_restarts_total\{/m);
    expect(
      metrics
        .split('\n')
        .filter((line) => line.startsWith('orders_read_model_partition_lag{') && !line.endsWith(' 0')),
    ).toEqual([]);

    const auth = { authorization: `Bearer ${keyOf(1)}` };
    const page = (await (
      await fetch(fixture.apiUrl(service, '/orders?limit=200'), { headers: auth })
    ).json()) as {
      total: number;
      data: { id: number }[];
    };
    expect(page.total).toBe(30);
    expect(page.data.map((o) => o.id)).not.toContain(999);

    const port = kafkajsPort({
      brokers: inject('kafkaBrokers').split(','),
      clientId: 'rebuild-test',
      sessionTimeoutMs: 6000,
      logger: pino({ level: 'silent' }),
    });
    const files = new ModelFiles(fixture.dataDir);
    const rebuilt = await rebuildModel({
      port,
      topics: fixture.topics,
      files,
      groupId: 'tx-rebuild',
      logger: pino({ level: 'silent' }),
    });
    await port.close();
    const live = new Database(files.currentFile()!, { readonly: true });
    const fresh = new Database(rebuilt.file, { readonly: true });
    expect(dumpModel(fresh)).toEqual(dumpModel(live));
    live.close();
    fresh.close();
  });
});

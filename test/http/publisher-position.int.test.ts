/**
 * Read-your-writes for a publisher, as docs/api.md shows it: an order event published with kcat
 * (librdkafka, a producer this project did not write) to the running service's orders topic, the
 * partition and offset kcat reports for it built into `X-Read-Position`, and a request with it.
 * Every try's answer holds the order: 20 tries, each a new order, none retried.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { messageKeyOf } from '../../src/kafka/publisher.js';
import type { RunningService } from '../../src/service.js';
import { keyOf } from '../helpers/api.js';
import { orderCreated } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture, type ServiceFixture } from '../helpers/service.js';

const tries = 20;

/** Publishes one `key<TAB>value` line with kcat; the partition and offset it reports for the record. */
function kcatPublish(topic: string, key: string, value: string): { partition: number; offset: number } {
  const run = spawnSync(
    'kcat',
    // murmur2_random: the partitioner of the Java client and kafkajs; -vv reports each delivery
    ['-P', '-b', inject('kafkaBrokers'), '-t', topic, '-K', '\t', '-X', 'partitioner=murmur2_random', '-vv'],
    { input: `${key}\t${value}\n`, encoding: 'utf8' },
  );
  if (run.error !== undefined || run.status !== 0) {
    throw new Error(
      `kcat failed (is the Debian package kcat installed? .ci/run installs it): ${run.error?.message ?? ''}${run.stderr}`,
    );
  }
  const delivered = /Message delivered to partition (\d+) \(offset (\d+)\)/.exec(run.stderr);
  if (delivered === null) throw new Error(`kcat reported no delivery: ${run.stderr}`);
  return { partition: Number(delivered[1]), offset: Number(delivered[2]) };
}

describe('a position built from what kcat reports', () => {
  let fixture: ServiceFixture;
  let service: RunningService;
  const headers = { authorization: `Bearer ${keyOf(1)}` };

  beforeAll(async () => {
    // a loaded machine may take a while to apply a record; the answer waits for it rather than 503
    fixture = await serviceFixture({ orders: 20, env: { READ_POSITION_WAIT_MS: '10000' } });
    service = await fixture.start();
    await waitUntil('the service knows the key', async () => {
      const answer = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers });
      await answer.text();
      return answer.status === 200;
    });
  });
  afterAll(async () => {
    await service.close();
  });

  it(`gets the order it published in ${tries} of ${tries} tries`, async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < tries; i++) {
      const orderId = 9_000_000 + i;
      // created after every demo order: the first of the list
      const createdAt = new Date(Date.UTC(2100, 0, 1) + i * 1000).toISOString();
      const event = orderCreated(
        { order_id: orderId, organization_id: 1, status: 'finished', created_at: createdAt },
        { occurred_at: createdAt },
      );
      const { partition, offset } = kcatPublish(
        fixture.topics.orders,
        messageKeyOf(event),
        JSON.stringify(event),
      );
      const position = `topic=${fixture.topics.orders};partition=${partition};offset=${offset}`;
      const asked = { headers: { ...headers, 'x-read-position': position } };
      const [list, articles] = await Promise.all([
        fetch(fixture.apiUrl(service, '/orders?limit=1&status=finished'), asked),
        fetch(fixture.apiUrl(service, `/orders/${orderId}/articles`), asked),
      ]);
      const page = (await list.json()) as { data?: { id: number }[] };
      const own = (await articles.json()) as { order_id?: number };
      const held = list.status === 200 && page.data?.[0]?.id === orderId && own.order_id === orderId;
      outcomes.push(held ? 'held' : `${list.status}/${articles.status} ${JSON.stringify(page)}`);
    }
    expect(outcomes).toEqual(Array<string>(tries).fill('held'));
  });

  it('is refused with 400 for a topic the service does not read orders from', async () => {
    const answer = await fetch(fixture.apiUrl(service, '/orders'), {
      headers: { ...headers, 'x-read-position': `topic=${fixture.topics.apiKeys};partition=0;offset=0` },
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: 'Invalid read position' });
  });
});

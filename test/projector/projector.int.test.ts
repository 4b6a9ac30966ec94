import { deadLetterPreviewBytes } from '../../src/read-model/dead-letters.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { connectedClients, createContractTopics, publish, testKafka } from '../helpers/kafka.js';
import { orderCreated, statusChanged } from '../helpers/events.js';
import { projectUntilCaughtUp } from '../helpers/projection.js';
import { dumpModel, memoryReadModel, recountedCounters, storedCounters } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';

describe('projector through the real broker', () => {
  const dir = tempDir('projector-int');

  it('converges to the canonical model from shuffled topics with duplicates, and dead-letters each garbage message once', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const { history, publications, garbage } = seededLog(20261121, {
      orgs: 4,
      orders: 40,
      events: 600,
      garbage: 35,
    });
    await publish(producer, topics, publications);

    const db = await projectUntilCaughtUp(topics, join(dir, 'model.sqlite'));
    const expected = memoryReadModel();
    expected.apply(...history);
    expect(dumpModel(db)).toEqual(dumpModel(expected.db));
    expect(storedCounters(db)).toEqual(recountedCounters(db));
    const letters = db.prepare('SELECT raw_value, reason FROM dead_letters').all() as {
      raw_value: Buffer | null;
      reason: string;
    }[];
    const key = (raw: Buffer | null, reason: string): string => `${raw?.toString('hex') ?? 'null'}/${reason}`;
    expect(letters.map((l) => key(l.raw_value, l.reason)).sort()).toEqual(
      // a dead letter keeps the first deadLetterPreviewBytes of a value (its size and SHA-256 in the detail)
      garbage.map((g) => key(g.raw?.subarray(0, deadLetterPreviewBytes) ?? null, g.reason)).sort(),
    );
    db.close();
  });

  it('applies the later of two facts 300 µs apart although it is published first with the smaller event id', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const second = '2026-11-21T10:15:00';
    const pairs = Array.from({ length: 20 }, (_, i) => i + 1).flatMap((id) => [
      orderCreated({ order_id: id, status: 'publishing' }, { occurred_at: `${second}Z` }),
      statusChanged(id, 'finished', { event_id: `a-${id}`, occurred_at: `${second}.000400Z` }),
      statusChanged(id, 'publishing', { event_id: `b-${id}`, occurred_at: `${second}.000100Z` }),
    ]);
    await publish(producer, topics, pairs);

    const db = await projectUntilCaughtUp(topics, join(dir, 'precision.sqlite'));
    const statuses = db.prepare('SELECT DISTINCT status, listed_status FROM orders').all();
    expect(statuses).toEqual([{ status: 'finished', listed_status: 'finished' }]);
    db.close();
  });
});

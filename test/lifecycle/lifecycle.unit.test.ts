import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../schemas/events.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { openReadModel } from '../../src/read-model/database.js';
import { keyOf as apiKeyOf, issueKeyOf } from '../helpers/api.js';
import { apiKeyRevoked, at, orderCreated, orderDeleted } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { dumpModel, memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { markPreviousProjectionVersion } from '../../tools/model-progress.js';

const root = tempDir('lifecycle');
let n = 0;
const dataDir = (): string => join(root, `data-${(n += 1)}`);
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

function started(fixture: LifecycleFixture): LifecycleFixture {
  running.push(fixture);
  fixture.lifecycle.start();
  return fixture;
}

const orders = (from: number, count: number, org = 1): DomainEvent[] =>
  Array.from({ length: count }, (_, i) =>
    orderCreated({ order_id: from + i, organization_id: org }, { occurred_at: at(from + i) }),
  );

const caughtUp = async (f: LifecycleFixture): Promise<boolean> => {
  await f.tick();
  return f.lifecycle.health().totalLag === 0;
};

const totalOf = (f: LifecycleFixture, orgId = 1): number =>
  f.lifecycle.reads.orderPage({ orgId, status: null, limit: 1, offset: 0 }).total;

describe('the read-model lifecycle (in-memory Kafka port)', () => {
  it('reaches lag 0 and readiness when every message is followed by a transaction marker, with no restart', async () => {
    const f = started(lifecycleFixture(dataDir(), { stallTimeoutMs: 100 }));
    f.publish([issueKeyOf(1), ...orders(1, 30)], { markers: true });
    await waitUntil('caught up', () => caughtUp(f), 10_000, 5);
    await new Promise((resolve) => setTimeout(resolve, 150));
    await f.tick();
    const health = f.lifecycle.health();
    expect(health).toMatchObject({ ready: true, reasons: [], state: 'live', totalLag: 0 });
    expect(health.partitions.every((p) => p.nextOffset === p.endOffset)).toBe(true);
    expect(f.restarts).toEqual([]);
    expect(totalOf(f)).toBe(30);
  });

  it('retries a projector whose start fails while the broker is unreachable, and catches up once it is back', async () => {
    const f = lifecycleFixture(dataDir());
    f.publish([issueKeyOf(1), ...orders(1, 20)]);
    f.kafka.breakDown();
    started(f);
    const served = (): LifecycleFixture['restarts'] => f.restarts.filter((r) => r.projector === 'served');
    await waitUntil('three failed starts', () => served().length >= 3, 10_000, 5);
    expect(served().every((r) => r.reason === 'start_failed')).toBe(true);
    const down = f.lifecycle.health();
    expect(down.ready).toBe(false);
    expect(down.state).toBe('restarting');
    expect(down.reasons.join('; ')).toMatch(
      /the projector is down \(the broker is unreachable\); next start in \d+ s/,
    );
    f.kafka.recover();
    await waitUntil('caught up after the broker is back', () => caughtUp(f), 10_000, 5);
    expect(f.lifecycle.health()).toMatchObject({ ready: true, state: 'live' });
    expect(totalOf(f)).toBe(20);
  });

  it('restarts a projector that fails mid-stream and ends with every event applied exactly once', async () => {
    let batches = 0;
    const f = lifecycleFixture(dataDir(), {
      beforeBatch: (file) => {
        if (file.includes('keys-v')) return;
        batches += 1;
        if (batches === 3 || batches === 7) throw new Error('the projector thread died');
      },
    });
    f.kafka.batchSize = 7;
    const events = [issueKeyOf(1), ...orders(1, 120), orderDeleted(5, { occurred_at: at(500) })];
    f.publish(events);
    started(f);
    await waitUntil('caught up', () => caughtUp(f), 10_000, 5);
    expect(f.restarts.map((r) => r.reason)).toEqual(['failed', 'failed']);
    await f.lifecycle.stop();
    // the orders model holds no keys: they live in the keys store
    const expected = memoryReadModel(openReadModel(':memory:'));
    expected.apply(...events.filter((event) => !event.type.startsWith('api_key.')));
    const db = new Database(f.lifecycle.servedFile(), { readonly: true });
    expect(dumpModel(db)).toEqual(dumpModel(expected.db));
    db.close();
  });

  it('restarts a projector that stalls while lagging, and catches up with the new one', async () => {
    const f = started(lifecycleFixture(dataDir(), { stallTimeoutMs: 50 }));
    f.publish([issueKeyOf(1), ...orders(1, 10)]);
    await waitUntil('caught up', () => caughtUp(f), 10_000, 5);
    const stuck = f.lifecycle.servedProjector()!;
    stuck.pause();
    f.publish(orders(11, 10));
    await waitUntil('restarted as stalled', async () => (await f.tick(), f.restarts.length > 0), 10_000, 10);
    expect(f.restarts).toEqual([{ projector: 'served', reason: 'stalled' }]);
    await waitUntil('caught up again', () => caughtUp(f), 10_000, 5);
    expect(f.lifecycle.servedProjector()).not.toBe(stuck);
    expect(totalOf(f)).toBe(20);
  });

  it('serves a proposed model only once it has reached the served one, so totals never fall and a deleted order never returns', async () => {
    // The candidate's first batches are slowed down, so that a switch before it has reached the
    // served model would show.
    let slow = '';
    let slowBatches = 20;
    const f = started(
      lifecycleFixture(dataDir(), {
        beforeBatch: (file) =>
          file === slow && (slowBatches -= 1) >= 0
            ? new Promise((resolve) => setTimeout(resolve, 10))
            : undefined,
      }),
    );
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 200), orderDeleted(1, { occurred_at: at(1000) })]);
    await waitUntil('caught up', () => caughtUp(f), 10_000, 5);
    const first = f.lifecycle.servedFile();

    // A rebuild proposes an empty file: it has to replay everything before it may be served.
    const proposed = f.files.newGenerationFile();
    openReadModel(proposed).close();
    slow = proposed;
    f.files.proposeNext(proposed);
    f.lifecycle.checkProposals();
    expect(f.lifecycle.health().state).toBe('catching_up_candidate');
    // The candidate's projector gives way to API requests; the served model's never does.
    expect(f.givesWay(proposed)).toBe(true);
    expect(f.givesWay(first)).toBe(false);

    // the total answered before the proposal: no answer after it may be lower
    const totals: number[] = [totalOf(f)];
    const sawDeleted: boolean[] = [];
    let next = 201;
    while (f.lifecycle.servedFile() === first) {
      f.publish(orders(next, 3));
      next += 3;
      await f.tick();
      totals.push(totalOf(f));
      sawDeleted.push(f.lifecycle.reads.articlesOfOrder(1, 1) !== null);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    for (let i = 0; i < 20; i += 1) {
      totals.push(totalOf(f));
      sawDeleted.push(f.lifecycle.reads.articlesOfOrder(1, 1) !== null);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(f.lifecycle.servedFile()).toBe(proposed);
    expect(f.givesWay(proposed)).toBe(false);
    expect(f.files.currentFile()).toBe(proposed);
    expect(f.files.nextFile()).toBeNull();
    expect(totals.every((total, i) => i === 0 || total >= totals[i - 1]!)).toBe(true);
    expect(sawDeleted.some(Boolean)).toBe(false);
    expect(f.transitions.map((t) => t.to)).toContain('switching');
    expect(f.transitions.every((t) => t.allowed)).toBe(true);
    await waitUntil('caught up on the new model', () => caughtUp(f), 10_000, 5);
    expect(totalOf(f)).toBe(next - 2);
  });

  it('lets a candidate stop giving way to requests when it gains too little on the served model, or is near it', async () => {
    // The candidate applies as many batches as it is allowed, then waits.
    let allowance = Number.POSITIVE_INFINITY;
    const waiting: (() => void)[] = [];
    const allow = (batches: number): void => {
      allowance = batches;
      for (const wake of waiting.splice(0)) wake();
    };
    const gate = async (): Promise<void> => {
      while (allowance <= 0) await new Promise<void>((resolve) => waiting.push(resolve));
      allowance -= 1;
    };
    let proposed = '';
    const f = started(
      lifecycleFixture(dataDir(), {
        readyMaxLag: 20,
        candidateGainWindowMs: 50,
        beforeBatch: (file) => (file === proposed ? gate() : undefined),
      }),
    );
    f.kafka.batchSize = 5;
    f.publish([issueKeyOf(1), ...orders(1, 200)]);
    await waitUntil('caught up', () => caughtUp(f), 10_000, 5);

    allow(0);
    proposed = f.files.newGenerationFile();
    openReadModel(proposed).close();
    f.files.proposeNext(proposed);
    f.lifecycle.checkProposals();
    const windowPassed = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 80));
    await waitUntil('the candidate runs', () => waiting.length > 0, 5_000, 5);
    await f.tick();
    expect(f.givesWay(proposed)).toBe(true);
    // 10 batches of 5: a quarter of its distance gained in the window, so it keeps giving way.
    allow(10);
    await waitUntil('10 batches applied', () => allowance === 0 && waiting.length > 0, 5_000, 5);
    await windowPassed();
    await f.tick();
    expect(f.givesWay(proposed)).toBe(true);
    // Nothing gained in the next window: it runs at full speed.
    await windowPassed();
    await f.tick();
    expect(f.givesWay(proposed)).toBe(false);
    allow(Number.POSITIVE_INFINITY);
    await waitUntil(
      'switched',
      async () => (await f.tick(), f.lifecycle.servedFile() === proposed),
      10_000,
      5,
    );

    // A candidate within READY_MAX_LAG of the served model runs at full speed at the next lag check.
    const near = lifecycleFixture(dataDir(), { readyMaxLag: 1_000_000, candidateGainWindowMs: 60_000 });
    started(near);
    near.publish([issueKeyOf(1), ...orders(1, 50)]);
    await waitUntil('caught up', () => caughtUp(near), 10_000, 5);
    const next = near.files.newGenerationFile();
    openReadModel(next).close();
    near.files.proposeNext(next);
    near.lifecycle.checkProposals();
    expect(near.givesWay(next)).toBe(true);
    // (the window of 60 s never passes here: only being near can clear the flag)
    await waitUntil(
      'the candidate near the served model stops giving way',
      async () => (await near.lifecycle.checkLag(), near.givesWay(next) === false),
      5_000,
      5,
    );
  });

  it('honours a revocation from the rebuilt model while it serves a file of an older projection version', async () => {
    const dir = dataDir();
    const seed = lifecycleFixture(dir);
    seed.publish([issueKeyOf(1), ...orders(1, 300)]);
    started(seed);
    await waitUntil('caught up', () => caughtUp(seed), 10_000, 5);
    await seed.lifecycle.stop();
    running.splice(0);
    const old = seed.files.currentFile()!;
    markPreviousProjectionVersion(old);

    // The same directory and log, under a lifecycle whose projector is slow to replay orders.
    let slow = true;
    const f = lifecycleFixture(dir, {
      beforeBatch: () => (slow ? new Promise((resolve) => setTimeout(resolve, 20)) : undefined),
    });
    f.kafka.batchSize = 1;
    f.publish([issueKeyOf(1), ...orders(1, 300)]);
    started(f);
    const hash = sha256Hex(apiKeyOf(1));
    expect(f.lifecycle.health().state).toBe('catching_up_candidate');
    expect(f.lifecycle.health().reasons).toContain(
      'the served model is of an older projection version; a rebuild is running',
    );
    expect(f.lifecycle.reads.orgOfKeyHash(hash)).toBe(1);
    f.publish([apiKeyRevoked('test-api-key-of-org-1', { occurred_at: at(10_000) })]);
    const revokedAt = Date.now();
    await waitUntil(
      'the revocation is honoured',
      () => f.lifecycle.reads.orgOfKeyHash(hash) === null,
      5_000,
      5,
    );
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
    expect(f.lifecycle.servedFile()).toBe(old);
    slow = false;
    await waitUntil(
      'switched to the rebuilt model',
      async () => (await f.tick(), f.lifecycle.servedFile() !== old),
      10_000,
      5,
    );
    expect(f.lifecycle.reads.orgOfKeyHash(hash)).toBeNull();
  });
});

describe('a batch the client cannot read', () => {
  it('is named in readiness and reported, while the other partitions and topics keep being applied', async () => {
    const f = lifecycleFixture(dataDir());
    running.push(f);
    const blockedTopic = 'order-status';
    f.kafka.makeUnreadable(blockedTopic, 1, 0, 'LZ4 compression not implemented');
    f.publish([issueKeyOf(1), ...orders(1, 40)]);
    f.publish(Array.from({ length: 40 }, (_, i) => statusChangedAt(i + 1)));
    f.lifecycle.start();
    await waitUntil(
      'every readable partition caught up',
      async () => {
        await f.tick();
        return f.lifecycle
          .health()
          .partitions.every((p) => p.lag === 0 || (p.topic === blockedTopic && p.partition === 1));
      },
      10_000,
      5,
    );
    const health = f.lifecycle.health();
    expect(health.ready).toBe(false);
    expect(health.reasons.join('; ')).toMatch(
      /order-status partition 1 cannot be read at offset 0 \(LZ4 compression not implemented\); the other partitions go on, this one is read again in \d+ s/,
    );
    expect(totalOf(f)).toBe(40);
    f.kafka.readable(blockedTopic, 1);
    await waitUntil('the partition is read once it can be', () => caughtUp(f), 10_000, 5);
    expect(f.lifecycle.health()).toMatchObject({ ready: true, reasons: [] });
    expect(f.restarts).toEqual([]);
  });
});

function statusChangedAt(orderId: number): DomainEvent {
  return {
    event_id: `s-${orderId}`,
    type: 'order.status_changed',
    occurred_at: at(10_000 + orderId),
    data: { order_id: orderId, status: 'finished' },
  };
}

/**
 * The served projector under a log that loses events it has not read yet (records deleted past its
 * position while it lags, as retention does): it stops rather than read on from the new log start,
 * the replica says why, the served model keeps answering, and an operator's acceptance lets it on.
 * And the log watch: a topic that forgets, a log that no longer starts at 0, are warnings only.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { at, orderCreated } from '../helpers/events.js';
import { issueKeyOf } from '../helpers/api.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('history');
let n = 0;
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

const listed = (f: LifecycleFixture): number =>
  f.lifecycle.reads.orderPage({ orgId: 1, status: null, limit: 100, offset: 0 }).total;
const orders = (ids: readonly number[]) =>
  ids.map((id) => orderCreated({ order_id: id }, { occurred_at: at(id) }));

describe('a log that loses events under the served projector', () => {
  it('stops the projector instead of reading on from the new log start, says why, and goes on once the loss is accepted', async () => {
    let gate: Promise<void> | null = null;
    let open: () => void = () => undefined;
    const f = lifecycleFixture(join(root, `data-${(n += 1)}`), {
      beforeBatch: () => gate ?? undefined,
    });
    running.push(f);
    f.publish([issueKeyOf(1), ...orders([1, 2, 3])]);
    f.lifecycle.start();
    await waitUntil('three orders served', async () => {
      await f.tick();
      return listed(f) === 3;
    });
    // the projector is held before its next batch while the log loses what it has not read
    gate = new Promise<void>((resolve) => (open = resolve));
    f.publish(orders([4, 5, 6, 7, 8, 9]));
    await waitUntil('the projector waits at a batch', () => f.lifecycle.health().projector?.running === true);
    const ends = await f.kafka.endOffsets([testTopics.orders]);
    for (const end of ends) f.kafka.deleteRecords(testTopics.orders, end.partition, end.end);
    gate = null;
    open();
    await waitUntil('the replica says the log does not hold what the model needs', async () => {
      await f.tick();
      return f.lifecycle
        .health()
        .reasons.some(
          (r) => r.includes('the log does not hold what this model needs') && r.includes(testTopics.orders),
        );
    });
    expect(f.lifecycle.health().ready).toBe(false);
    expect(listed(f)).toBeGreaterThanOrEqual(3);
    expect(f.lifecycle.health().warnings.some((w) => w.includes('would be refused'))).toBe(true);

    for (const end of ends) {
      f.files.recordAcceptedLoss({
        topic: testTopics.orders,
        partition: end.partition,
        below: end.end,
        reason: 'test',
        by: 'test',
        at: new Date().toISOString(),
      });
    }
    await waitUntil('ready again once the loss is accepted', async () => {
      await f.tick();
      return f.lifecycle.health().ready;
    });
    expect(f.lifecycle.health().warnings).toEqual([]);
  });

  it('refuses topics deleted and created again, whatever their offsets, and says why', async () => {
    const dataDir = join(root, `data-${(n += 1)}`);
    const first = lifecycleFixture(dataDir);
    running.push(first);
    first.publish([issueKeyOf(1), ...orders([1, 2])]);
    first.lifecycle.start();
    await waitUntil('two orders served', async () => {
      await first.tick();
      return listed(first) === 2;
    });
    await first.lifecycle.stop();
    const again = lifecycleFixture(dataDir, { kafka: first.kafka });
    running.push(again);
    again.kafka.recreate(testTopics.orders);
    again.publish(orders([3, 4, 5, 6, 7, 8, 9, 10]));
    again.lifecycle.start();
    await waitUntil('the replica says the topic is another one', async () => {
      await again.tick();
      return again.lifecycle
        .health()
        .reasons.some((r) => r.includes(`${testTopics.orders} partition 0: the topic has another id`));
    });
    expect(listed(again)).toBe(2);
  });

  it('warns of a topic that forgets events, and stays ready', async () => {
    const f = lifecycleFixture(join(root, `data-${(n += 1)}`));
    running.push(f);
    f.publish([issueKeyOf(1), ...orders([1])]);
    f.kafka.retention.set(testTopics.articles, {
      'retention.ms': '604800000',
      'retention.bytes': '-1',
      'cleanup.policy': 'delete',
    });
    f.lifecycle.start();
    await waitUntil('ready with the warning', async () => {
      await f.tick();
      const health = f.lifecycle.health();
      return health.ready && health.warnings.length > 0;
    });
    expect(f.lifecycle.health().warnings).toEqual([
      `${testTopics.articles} forgets events (retention.ms=604800000), and a rebuild needs every one; run: topics retain (docs/operations.md, "A topic that forgets")`,
    ]);
    await f.kafka.retainEveryEvent([testTopics.articles]);
    await waitUntil('no warning once the topic keeps every event', async () => {
      await f.tick();
      return f.lifecycle.health().warnings.length === 0;
    });
  });
});

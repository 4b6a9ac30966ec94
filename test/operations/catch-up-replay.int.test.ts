import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBuildFile, openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { uniqueTopicName, waitUntil } from '../helpers/kafka.js';
import { projectUntilCaughtUp } from '../helpers/projection.js';
import { dumpModel, ordersOnly } from '../helpers/read-model.js';
import { serviceFixture, type ServiceFixture } from '../helpers/service.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';

const auth = { authorization: `Bearer ${keyOf(1)}` };

/** Far behind at once: a lag of 1 000 messages and half the log is caught up by replay. */
const replayEnv = {
  CATCH_UP_REPLAY_MIN_LAG: '1000',
  CATCH_UP_REPLAY_MIN_SHARE: '0.5',
  LAG_CHECK_INTERVAL_MS: '200',
};

function modelOf(file: string): Record<string, unknown[]> {
  const db = openReadModel(file, { readonly: true });
  try {
    return dumpModel(db);
  } finally {
    db.close();
  }
}

/** The model the projection loop builds from the same topics, in the test's thread: the reference. */
async function referenceModel(fixture: ServiceFixture): Promise<Record<string, unknown[]>> {
  const file = join(fixture.dataDir, '..', `reference-${uniqueTopicName('ref')}.sqlite`);
  const db = await projectUntilCaughtUp(fixture.topics, file);
  try {
    return ordersOnly(dumpModel(db));
  } finally {
    db.close();
  }
}

describe('catching up by replay (service and broker)', () => {
  it('replays a far backlog into a new model, serves it, and then applies new events batch by batch', async () => {
    const fixture = await serviceFixture({ orders: 3000, env: replayEnv });
    const files = new ModelFiles(fixture.dataDir);
    const service = await fixture.start();
    const first = files.currentFile();
    await waitUntil('the service is ready', () => service.health().ready, 120_000);
    const replayed = files.currentFile()!;
    // the model the replay built is served, not the empty one the service created at its start
    expect(replayed).not.toBe(first);
    expect(files.nextFile()).toBeNull();
    expect(files.abandonedBuilds()).toEqual([]);

    await fixture.publish(
      Array.from({ length: 50 }, (_, i) =>
        orderCreated({ order_id: 900_000 + i, organization_id: 1 }, { occurred_at: at(900_000 + i) }),
      ),
    );
    await waitUntil(
      'the new orders are served',
      async () => {
        const response = await fetch(fixture.apiUrl(service, '/orders/900049/articles'), { headers: auth });
        return response.status === 200;
      },
      60_000,
    );
    await waitUntil('live', () => service.health().state === 'live', 60_000);
    // The orders' partitions are applied each at its own pace: one order served says nothing of the others.
    await waitUntil(
      'every new order is applied',
      () =>
        (modelOf(replayed)['orders'] as { order_id: number }[]).filter((o) => o.order_id >= 900_000)
          .length === 50,
      60_000,
    );
    // no second replay: the same file took the new events
    expect(files.currentFile()).toBe(replayed);
    expect(modelOf(replayed)).toEqual(await referenceModel(fixture));
  });

  it('catches up after being killed during the replay, the abandoned build removed', async () => {
    const fixture = await serviceFixture({ orders: 12_000 });
    const dataDir = fixture.dataDir;
    const env = {
      ...serviceEnv({
        topics: fixture.topics,
        dataDir,
        httpPort: 0,
        adminPort: 0,
        groupId: uniqueTopicName('killed'),
      }),
      ...replayEnv,
      LOG_LEVEL: 'info',
    };
    const files = new ModelFiles(dataDir);
    // What a build file holds before it gets any event: growing past it means events are written
    // (its size is read without a lock, which the replay's writer holds for most of its run).
    const empty = join(dataDir, '..', 'empty.building');
    openBuildFile(empty).db.close();
    const emptySize = statSync(empty).size;
    const buildBytes = (): number =>
      Math.max(0, ...files.abandonedBuilds().map((file) => (existsSync(file) ? statSync(file).size : 0)));
    const killed = spawnService(env);
    await waitUntil('the replay has written events', () => buildBytes() > emptySize, 120_000, 5);
    killed.child.kill('SIGKILL');
    await killed.exited;
    expect(killed.output.join('\n')).toContain('far behind: catching up by replaying the topics');
    const abandoned = files.abandonedBuilds();
    expect(abandoned.length).toBeGreaterThan(0);

    const again = spawnService(env);
    await waitUntil(
      'switched to the replayed model',
      () => again.output.some((line) => line.includes('switched to the caught-up model')),
      120_000,
    );
    expect(again.output.join('\n')).toContain('the catch-up replay finished');
    expect(files.abandonedBuilds().filter((file) => abandoned.includes(file))).toEqual([]);
    const reference = await referenceModel(fixture);
    await waitUntil(
      'the served model equals the reference',
      () => JSON.stringify(modelOf(files.currentFile()!)) === JSON.stringify(reference),
      60_000,
    );
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });
});

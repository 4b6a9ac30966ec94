/**
 * No build that is missing history is ever served (`src/kafka/history.ts`). On one-partition topics,
 * records are deleted from the start of a partition as retention does (`deleteRecords`), then a
 * rebuild, a new replica and the keys store's successor are each refused with the served model
 * kept; an operator's acceptance lets them through. Topics deleted and created again have other
 * ids than the model recorded: refused too.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import type { DomainEvent } from '../../schemas/events.js';
import type { TopicRole } from '../../schemas/streams.js';
import { KEYS_STORE_VERSION } from '../../projections/keys/schema.js';
import { loadConfig } from '../../src/config.js';
import { keysFile } from '../../src/keys/keys-files.js';
import { startService, type RunningService } from '../../src/service.js';
import { serviceArgv } from '../../tools/harness.js';
import { markPreviousProjectionVersion } from '../../tools/model-progress.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked, orderCreated, at } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { serviceEnv } from '../helpers/service-process.js';

const { admin, producer } = await connectedClients(testKafka());
const running: RunningService[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const service of running) await service.close().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function portOf(app: RunningService['app']): number {
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('not listening');
  return address.port;
}

interface Replica {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  start: () => Promise<RunningService>;
}

function replicaOn(topics: Record<TopicRole, string>): Replica {
  const dir = mkdtempSync(join(tmpdir(), 'history-'));
  dirs.push(dir);
  const dataDir = join(dir, 'data');
  const env = {
    ...serviceEnv({ topics, dataDir, httpPort: 0, adminPort: 0, groupId: uniqueTopicName('history') }),
    LOG_LEVEL: 'silent',
    LAG_CHECK_INTERVAL_MS: '200',
  };
  return {
    env,
    dataDir,
    start: async () => {
      const service = await startService(loadConfig(env), pino({ level: 'silent' }));
      running.push(service);
      return service;
    },
  };
}

const auth = (org: number) => ({ authorization: `Bearer ${keyOf(org)}` });

async function orderIds(service: RunningService, org = 1): Promise<number[] | number> {
  const response = await fetch(`http://127.0.0.1:${portOf(service.app)}${API_PREFIX}/orders?limit=200`, {
    headers: auth(org),
  });
  if (response.status !== 200) return response.status;
  return ((await response.json()) as { data: { id: number }[] }).data.map((o) => o.id);
}

async function count(service: RunningService): Promise<number> {
  const ids = await orderIds(service);
  return Array.isArray(ids) ? ids.length : -1;
}

async function readyz(
  service: RunningService,
): Promise<{ ready: boolean; reasons: string[]; warnings: string[] }> {
  const response = await fetch(`http://127.0.0.1:${portOf(service.admin)}/readyz`);
  return (await response.json()) as { ready: boolean; reasons: string[]; warnings: string[] };
}

const orders = (ids: readonly number[]): DomainEvent[] =>
  ids.map((id) => orderCreated({ order_id: id }, { occurred_at: at(id * 1000) }));

/** Runs the CLI as its own process, as an operator would; resolves with its exit code and output. */
function cli(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, serviceArgv(args), {
    env: { ...env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output })));
}

/** Deletes a partition's records below `offset`, as retention does. */
const deleteBelow = async (topic: string, offset: number): Promise<void> => {
  // kafkajs's admin finds the partition's leader only among the topics whose metadata it holds
  await admin.fetchTopicMetadata({ topics: [topic] });
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: String(offset) }] });
};

describe('a log shortened by retention', () => {
  it('refuses a rebuild and a new replica, keeps serving every order, and lets them through once the loss is accepted', async () => {
    const topics = await createContractTopics(admin, 1);
    await publish(producer, topics, [issueKeyOf(1), ...orders([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])]);
    const replica = replicaOn(topics);
    const service = await replica.start();
    await waitUntil('ten orders served', async () => (await count(service)) === 10);

    await deleteBelow(topics.orders, 5);
    await publish(producer, topics, orders([11, 12]));
    await waitUntil('twelve orders served', async () => (await count(service)) === 12);
    await waitUntil('the lost history is a warning', async () =>
      (await readyz(service)).warnings.some((w) =>
        w.includes(`${topics.orders} partition 0: the log starts at offset 5`),
      ),
    );
    const served = await readyz(service);
    expect(served.ready, served.reasons.join('; ')).toBe(true);

    const refused = await cli(replica.env, ['rebuild']);
    expect(refused.code, refused.output).not.toBe(0);
    expect(refused.output).toContain(
      `${topics.orders} partition 0: the log starts at offset 5, and the model needs it from offset 0`,
    );
    expect(refused.output).toContain('accept-history-loss');
    // the served model stays: no proposal, every order
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await orderIds(service)).toHaveLength(12);

    // a new replica on the same topics is not ready, and says why
    const fresh = replicaOn(topics);
    const second = await fresh.start();
    await waitUntil('the new replica says why it is not ready', async () =>
      (await readyz(second)).reasons.some((r) => r.includes('the log starts at offset 5')),
    );
    expect((await readyz(second)).ready).toBe(false);

    // the operator accepts the loss: the new replica catches up with what the log holds
    const accepted = await cli(fresh.env, [
      'accept-history-loss',
      '--topic',
      topics.orders,
      '--partition',
      '0',
      '--below',
      '5',
      '--reason',
      'the orders before offset 5 are gone for good',
    ]);
    expect(accepted.code, accepted.output).toBe(0);
    await waitUntil('the new replica is ready', async () => (await readyz(second)).ready, 60_000);
    await waitUntil('the new replica has read what the log holds', async () => (await count(second)) === 7);
    expect(await orderIds(second)).toEqual([12, 11, 10, 9, 8, 7, 6]);
    expect(await orderIds(service)).toHaveLength(12);
  });

  it('brings up a new replica from a snapshot, keys store included, on topics that lost their first events', async () => {
    const topics = await createContractTopics(admin, 1);
    await publish(producer, topics, [
      issueKeyOf(1),
      issueKeyOf(2),
      ...orders([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
    ]);
    const source = replicaOn(topics);
    const first = await source.start();
    await waitUntil('ten orders served', async () => (await count(first)) === 10);
    await deleteBelow(topics.orders, 5);
    await deleteBelow(topics.apiKeys, 1);

    const snapshot = join(mkdtempSync(join(tmpdir(), 'history-snapshot-')), 'model.sqlite');
    dirs.push(dirname(snapshot));
    const taken = await cli(source.env, ['snapshot', '--to', snapshot]);
    expect(taken.code, taken.output).toBe(0);
    expect(taken.output).toContain(`Wrote the keys store's copy ${snapshot}.keys`);
    const fresh = replicaOn(topics);
    const restored = await cli(fresh.env, ['snapshot', '--restore', snapshot]);
    expect(restored.code, restored.output).toBe(0);
    expect(restored.output).toContain('Restored the keys store');
    const second = await fresh.start();
    await waitUntil('the restored replica is ready', async () => (await readyz(second)).ready, 60_000);
    await waitUntil('ten orders served by the restored replica', async () => (await count(second)) === 10);
    expect(await orderIds(second)).toEqual([10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
  });

  it('keeps serving every order through a projection version change whose rebuild the log cannot give', async () => {
    const topics = await createContractTopics(admin, 1);
    await publish(producer, topics, [issueKeyOf(1), ...orders([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])]);
    const replica = replicaOn(topics);
    const first = await replica.start();
    await waitUntil('ten orders served', async () => (await count(first)) === 10);
    await deleteBelow(topics.orders, 5);
    await publish(producer, topics, orders([11, 12]));
    await waitUntil('twelve orders served', async () => (await count(first)) === 12);
    await first.close();
    const served = new ModelFiles(replica.dataDir).currentFile()!;
    markPreviousProjectionVersion(served);

    const service = await replica.start();
    await waitUntil('the candidate says why it cannot be built', async () =>
      (await readyz(service)).warnings.some((w) =>
        w.includes(
          `the candidate model cannot be built now (the log does not hold what this model needs: ${topics.orders} partition 0: the log starts at offset 5`,
        ),
      ),
    );
    for (let i = 0; i < 5; i += 1) {
      expect(await count(service)).toBe(12);
      expect(new ModelFiles(replica.dataDir).currentFile()).toBe(served);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
  });

  it('keeps a key valid and applies revocations when the keys topic has lost what the keys store of a new version needs', async () => {
    const topics = await createContractTopics(admin, 1);
    // the key of organization 1 at offset 0, five more after it
    await publish(producer, topics, [
      issueKeyOf(1),
      ...[2, 3, 4, 5, 6].map((org) => issueKeyOf(org)),
      ...orders([1]),
    ]);
    const replica = replicaOn(topics);
    const first = await replica.start();
    await waitUntil('the order is served', async () => (await count(first)) === 1);
    await first.close();
    // The store becomes the predecessor of this version's: as after a keys store version change.
    const store = keysFile(replica.dataDir);
    const db = new Database(store);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.prepare(`UPDATE projection_meta SET value = ? WHERE key = 'projection_version'`).run(
      String(KEYS_STORE_VERSION - 1),
    );
    db.close();
    renameSync(store, keysFile(replica.dataDir, KEYS_STORE_VERSION - 1));
    rmSync(`${store}-wal`, { force: true });
    rmSync(`${store}-shm`, { force: true });
    await deleteBelow(topics.apiKeys, 3);

    const service = await replica.start();
    // the keys store of this version cannot be built from the topic: it is seeded from its
    // predecessor and goes on from there, so revocations and issues since are applied
    await waitUntil('ready', async () => (await readyz(service)).ready, 60_000);
    expect(await orderIds(service)).toEqual([1]);
    await publish(producer, topics, [
      apiKeyRevoked('test-api-key-of-org-2', { occurred_at: at(10_000_000) }),
      issueKeyOf(7),
    ]);
    await waitUntil('the revocation since is applied', async () => (await orderIds(service, 2)) === 401);
    await waitUntil('the key issued since is accepted', async () =>
      Array.isArray(await orderIds(service, 7)),
    );
    expect(await orderIds(service)).toEqual([1]);
  });

  it('refuses to read on from topics deleted and created again, by their ids', async () => {
    const topics = await createContractTopics(admin, 1);
    await publish(producer, topics, [issueKeyOf(1), ...orders([1, 2, 3, 4, 5])]);
    const replica = replicaOn(topics);
    const first = await replica.start();
    await waitUntil('five orders served', async () => (await count(first)) === 5);
    await first.close();
    await admin.deleteTopics({ topics: Object.values(topics) });
    await waitUntil('the topics are gone', async () => {
      const names = new Set(await admin.listTopics());
      return Object.values(topics).every((topic) => !names.has(topic));
    });
    const again = await createContractTopicsNamed(topics);
    // more events than the old topics held: positions alone could not tell the logs apart
    await publish(producer, again, [issueKeyOf(1), ...orders([7, 8, 9, 10, 11, 12, 13])]);

    const service = await replica.start();
    let last: string[] = [];
    await waitUntil('the replica says the topics are not the ones its model was built from', async () =>
      (last = (await readyz(service)).reasons).some((r) =>
        r.includes(
          `${topics.orders} partition 0: the topic has another id than the one the model was built from`,
        ),
      ),
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; /readyz reasons: ${last.join(' | ')}`);
    });
    expect((await readyz(service)).ready).toBe(false);
  });
});

/** Creates topics of the given names again (one partition each). */
async function createContractTopicsNamed(
  topics: Record<TopicRole, string>,
): Promise<Record<TopicRole, string>> {
  const { createTopicsWithLeaders } = await import('../../src/kafka/kafkajs-topics.js');
  await waitUntil(
    'the topics are created again',
    async () => {
      try {
        await createTopicsWithLeaders(
          admin,
          Object.values(topics).map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })),
        );
        return true;
      } catch {
        return false;
      }
    },
    60_000,
    500,
  );
  return topics;
}

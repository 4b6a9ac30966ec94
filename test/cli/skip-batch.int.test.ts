/**
 * The operator's way past a record batch that can never be read: the service names the partition
 * and the batch's first and last offsets (/readyz, log), `skip-batch` records the skip, and the
 * running service moves past exactly that batch with a dead letter recording what, where, who and
 * why, and goes on from there.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, inject, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { freePort } from '../../tools/local-kafka.js';
import { runServiceCommand, spawnServiceCommand } from '../../tools/harness.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';
import { kcatProduce } from '../../tools/kcat.js';

function kcat(topic: string, partition: number, lines: string[], settings: string[] = []): void {
  kcatProduce({ brokers: inject('kafkaBrokers'), topic, partition, lines, settings });
}

describe('skip-batch', () => {
  const dir = tempDir('skip-batch');

  it('moves a running service past a batch that can never be read, recording it as a dead letter', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [issueKeyOf(1)]);
    const order = (id: number): string =>
      JSON.stringify(orderCreated({ order_id: id }, { occurred_at: at(id) }));
    kcat(topics.orders, 0, [`1\t${order(1)}`]);
    // Two records in one zstd batch of a few KB that inflates to 8 MB, beyond the service's bound.
    kcat(
      topics.orders,
      0,
      [`2\t${order(2).replace(/}$/, `${' '.repeat(8 * 1024 * 1024)}}`)}`, `3\t${order(3)}`],
      ['batch.size=100000000', 'linger.ms=200'],
    );
    kcat(topics.orders, 0, [`4\t${order(4)}`]);

    const dataDir = join(dir, 'data');
    const httpPort = await freePort();
    const adminPort = await freePort();
    const env = {
      ...serviceEnv({ topics, dataDir, httpPort, adminPort, groupId: uniqueTopicName('skip') }),
      BATCH_MAX_INFLATED_BYTES: String(1024 * 1024),
      LOG_LEVEL: 'warn',
    };
    const service = spawnService(env);
    let from = -1;
    let through = -1;
    await waitUntil('/readyz names the batch and how to move past it', async () => {
      const answer = await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null);
      const text = answer === null ? '' : await answer.text();
      const hint = /skip-batch --topic \S+ --partition 0 --from (\d+) --through (\d+)/.exec(text);
      if (hint !== null) [from, through] = [Number(hint[1]), Number(hint[2])];
      return hint !== null;
    });
    expect([from, through]).toEqual([1, 2]);
    expect(service.output.join('\n')).toMatch(/inflates beyond BATCH_MAX_INFLATED_BYTES/);

    const printed = await runServiceCommand(
      [
        'skip-batch',
        '--topic',
        topics.orders,
        '--partition',
        '0',
        '--from',
        String(from),
        '--through',
        String(through),
        '--reason',
        'a producer bug padded a batch',
      ],
      env,
    );
    expect(printed).toMatch(
      /^Recorded in \S+operator-skips\.sqlite: \S+ partition 0, the record batch at offsets 1–2, skipped by \S+@\S+: a producer bug padded a batch$/m,
    );
    expect(printed).toMatch(
      /^The served model \(CURRENT, \S+\) is at offset 1, this batch: it moves past it at its next attempt/m,
    );
    const listed = async (): Promise<number[]> => {
      const answer = await fetch(`http://127.0.0.1:${httpPort}/api/external-api/v1/orders`, {
        headers: { authorization: `Bearer ${keyOf(1)}` },
      });
      return ((await answer.json()) as { data: { id: number }[] }).data.map((o) => o.id);
    };
    await waitUntil('the order after the batch is applied', async () => (await listed()).includes(4), 10_000);
    expect((await listed()).sort()).toEqual([1, 4]);
    expect(service.child.exitCode).toBeNull();

    const db = new Database(new ModelFiles(dataDir).currentFile()!, { readonly: true });
    const letters = db.prepare(`SELECT "offset", reason, detail FROM dead_letters`).all();
    db.close();
    expect(letters).toEqual([
      {
        offset: 1,
        reason: 'skipped_by_operator',
        detail: expect.stringMatching(
          /^offsets 1–2 skipped by \S+@\S+: a producer bug padded a batch$/,
        ) as unknown,
      },
    ]);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);

    // A rebuild replays the partition from its start: it moves past the skipped batch by itself, and
    // skip-batch reaches it while it waits at a batch nobody has skipped yet.
    kcat(
      topics.orders,
      0,
      [`5\t${order(5).replace(/}$/, `${' '.repeat(8 * 1024 * 1024)}}`)}`, `6\t${order(6)}`],
      ['batch.size=100000000', 'linger.ms=200'],
    );
    kcat(topics.orders, 0, [`7\t${order(7)}`]);
    const rebuild = spawnServiceCommand(['rebuild', '--no-promote'], env, ['ignore', 'pipe', 'pipe']);
    let rebuildOutput = '';
    rebuild.stdout?.on('data', (chunk: Buffer) => (rebuildOutput += chunk.toString()));
    rebuild.stderr?.on('data', (chunk: Buffer) => (rebuildOutput += chunk.toString()));
    const rebuilt = new Promise<number | null>((resolveExit) => rebuild.on('exit', resolveExit));
    try {
      await waitUntil('the rebuild waits at the batch nobody has skipped', () =>
        /"offset":4,"lastOffset":5,.*a record batch cannot be read/.test(rebuildOutput),
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; the rebuild wrote:\n${rebuildOutput}`);
      });
      expect(rebuildOutput).toMatch(/moving past a record batch an operator skipped/);
      await runServiceCommand(
        [
          'skip-batch',
          '--topic',
          topics.orders,
          '--partition',
          '0',
          '--from',
          '4',
          '--through',
          '5',
          '--reason',
          'again',
        ],
        env,
      );
      expect(await Promise.race([rebuilt, new Promise((r) => setTimeout(() => r('waiting'), 30_000))])).toBe(
        0,
      );
    } finally {
      rebuild.kill('SIGKILL');
    }
    const built = /into (\S+\.sqlite);/.exec(rebuildOutput);
    if (built === null) throw new Error(`the rebuild named no file:\n${rebuildOutput}`);
    const rebuiltDb = new Database(built[1] ?? '', { readonly: true });
    const rebuiltOrders = rebuiltDb.prepare(`SELECT order_id FROM orders ORDER BY order_id`).pluck().all();
    const rebuiltLetters = rebuiltDb
      .prepare(`SELECT "offset", reason, detail FROM dead_letters ORDER BY "offset"`)
      .all();
    rebuiltDb.close();
    expect(rebuiltOrders).toEqual([1, 4, 7]);
    expect(rebuiltLetters).toEqual([
      {
        offset: 1,
        reason: 'skipped_by_operator',
        detail: expect.stringMatching(
          /^offsets 1–2 skipped by \S+: a producer bug padded a batch$/,
        ) as unknown,
      },
      {
        offset: 4,
        reason: 'skipped_by_operator',
        detail: expect.stringMatching(/^offsets 4–5 skipped by \S+: again$/) as unknown,
      },
    ]);
  });
});

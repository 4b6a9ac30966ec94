/**
 * `skip-batch` names one batch, and only a model that meets that batch moves past it: a proposal
 * waiting in NEXT behind the batch is not moved (it would lose the readable orders before it); it
 * applies the skip, with a dead letter of its own, when its catch-up reaches the batch.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, inject, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { freePort } from '../../tools/local-kafka.js';
import { runServiceCommand } from '../../tools/harness.js';
import { kcatProduce } from '../../tools/kcat.js';
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
import { serviceEnv, spawnService, type ServiceProcess } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

function kcat(topic: string, lines: string[], settings: string[] = []): void {
  kcatProduce({ brokers: inject('kafkaBrokers'), topic, partition: 0, lines, settings });
}
const order = (id: number): string => JSON.stringify(orderCreated({ order_id: id }, { occurred_at: at(id) }));

function positionIn(file: string, topic: string): number | undefined {
  const db = new Database(file, { readonly: true });
  try {
    return db
      .prepare(`SELECT next_offset FROM consumer_offsets WHERE topic = ? AND partition = 0`)
      .pluck()
      .get(topic) as number | undefined;
  } finally {
    db.close();
  }
}

function deadLettersIn(file: string): unknown[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT "offset", reason, detail FROM dead_letters ORDER BY "offset"`).all();
  } finally {
    db.close();
  }
}

describe('skip-batch with a proposal waiting behind the batch', () => {
  const dir = tempDir('skip-batch-proposal');

  it('moves no model that is not at the batch; each applies the skip when it meets it', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [issueKeyOf(1)]);
    kcat(
      topics.orders,
      Array.from({ length: 10 }, (_, i) => `${i + 1}\t${order(i + 1)}`),
    );
    const dataDir = join(dir, 'data');
    const httpPort = await freePort();
    const adminPort = await freePort();
    const env = {
      ...serviceEnv({ topics, dataDir, httpPort, adminPort, groupId: uniqueTopicName('skip-next') }),
      BATCH_MAX_INFLATED_BYTES: String(1024 * 1024),
      LOG_LEVEL: 'warn',
    };
    // A rebuild kept aside at offset 10 of the orders' partition 0.
    const rebuilt = /into (\S+\.sqlite);/.exec(await runServiceCommand(['rebuild', '--no-promote'], env));
    const proposal = rebuilt?.[1] ?? '';
    expect(positionIn(proposal, topics.orders)).toBe(10);

    // Orders 11–20 at offsets 10–19, an unreadable batch at 20–21, order 23 at 22.
    kcat(
      topics.orders,
      Array.from({ length: 10 }, (_, i) => `${i + 11}\t${order(i + 11)}`),
    );
    kcat(
      topics.orders,
      [`21\t${order(21).replace(/}$/, `${' '.repeat(8 * 1024 * 1024)}}`)}`, `22\t${order(22)}`],
      ['batch.size=100000000', 'linger.ms=200'],
    );
    kcat(topics.orders, [`23\t${order(23)}`]);

    let service: ServiceProcess = spawnService(env);
    const readyz = async (): Promise<string> => {
      const answer = await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null);
      return answer === null ? '' : await answer.text();
    };
    await waitUntil(
      '/readyz names the batch',
      async () => /skip-batch --topic \S+ --partition 0 --from 20 --through 21/.test(await readyz()),
      120_000,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; /readyz said ${await readyz()}`);
    });
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const files = new ModelFiles(dataDir);
    const served = files.currentFile() ?? '';
    expect(positionIn(served, topics.orders)).toBe(20);

    // The operator proposes the kept rebuild, then skips the batch while no service runs.
    files.proposeNext(proposal);
    const printed = await runServiceCommand(
      [
        'skip-batch',
        '--topic',
        topics.orders,
        '--partition',
        '0',
        '--from',
        '20',
        '--through',
        '21',
        '--reason',
        'padded',
      ],
      env,
    );
    expect(printed).toMatch(/^The served model \(CURRENT, \S+\) is at offset 20, this batch/m);
    expect(printed).toMatch(
      /^The proposed model \(NEXT, \S+\) is at offset 10, before the batch: it reads offsets 10–19 first, then moves past the batch\.$/m,
    );
    // Neither model is moved by the command; the proposal stays behind the batch.
    expect(positionIn(proposal, topics.orders), printed).toBe(10);
    expect(positionIn(served, topics.orders), printed).toBe(20);

    // The service applies the skip to the served model, catches the proposal up through orders
    // 11–20, where it applies the skip too, and switches to it.
    service = spawnService(env);
    try {
      await waitUntil('the service serves the proposal', () => files.currentFile() === proposal, 120_000);
      const listed = async (): Promise<number[]> => {
        const answer = await fetch(`http://127.0.0.1:${httpPort}/api/external-api/v1/orders?limit=200`, {
          headers: { authorization: `Bearer ${keyOf(1)}` },
        });
        return ((await answer.json()) as { data: { id: number }[] }).data.map((o) => o.id);
      };
      await waitUntil('order 23 is listed', async () => (await listed()).includes(23), 30_000);
      expect((await listed()).sort((a, b) => a - b)).toEqual([
        ...Array.from({ length: 20 }, (_, i) => i + 1),
        23,
      ]);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    // The proposal met the batch and moved past it; the served model did too if its projector
    // fetched before the switch (its file is deleted once the proposal is served). Every move is
    // past exactly the batch.
    const moved = service.output.filter((line) =>
      line.includes('moving past a record batch an operator skipped'),
    );
    const nexts = moved.map((line) => (JSON.parse(line) as { offset: number; next: number }).next);
    expect(nexts.length).toBeGreaterThanOrEqual(1);
    expect(nexts.length).toBeLessThanOrEqual(2);
    expect(new Set(nexts)).toEqual(new Set([22]));
    const letter = {
      offset: 20,
      reason: 'skipped_by_operator',
      detail: expect.stringMatching(/^offsets 20–21 skipped by \S+@\S+: padded$/) as unknown,
    };
    expect(deadLettersIn(proposal)).toEqual([letter]);
  }, 300_000);
});

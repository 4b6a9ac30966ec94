/**
 * A rebuild whose articles are built in a thread of their own (as the `rebuild` command runs it)
 * ends with the same model as one consumer over every topic, dead letters and positions included;
 * when that thread dies, the rebuild fails and leaves no file behind.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { ProjectorThreadFailed, type ProjectorThread } from '../../src/projector/projector-thread.js';
import { rebuildModel } from '../../src/projector/rebuild.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { orderCreated } from '../helpers/events.js';
import { connectedClients, testKafka } from '../helpers/kafka.js';
import { dumpModel } from '../helpers/read-model.js';
import { serviceFixture } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { serviceArgv } from '../../tools/harness.js';

const logger = pino({ level: 'silent' });

function portOf(): ReturnType<typeof kafkajsPort> {
  return kafkajsPort({
    brokers: inject('kafkaBrokers').split(','),
    clientId: 'rebuild-split',
    sessionTimeoutMs: 6000,
    logger,
  });
}

/**
 * What a model holds beyond `dumpModel`: its dead letters (recording times aside), positions and
 * digests (each half XORs the rows of its own topics, so the joined digests equal one consumer's).
 */
function lettersAndPositions(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true });
  try {
    return {
      org_digests: db.prepare('SELECT * FROM org_digests ORDER BY org_id').all(),
      order_digests: db.prepare('SELECT * FROM order_digests ORDER BY order_id').all(),
      dead_letters: db
        .prepare(
          `SELECT topic, partition, "offset", message_key, raw_value, reason, detail FROM dead_letters
           ORDER BY topic, partition, "offset"`,
        )
        .all(),
      consumer_offsets: db.prepare('SELECT * FROM consumer_offsets ORDER BY topic, partition').all(),
    };
  } finally {
    db.close();
  }
}

describe('a rebuild with the articles in a thread of their own', () => {
  const dir = tempDir('rebuild-split');

  it('builds the same model as one consumer over every topic, dead letters and positions included', async () => {
    const fixture = await serviceFixture({ orders: 400 });
    // Messages that become dead letters, on the articles topic (built by the thread) and on the
    // orders topic (built by the rebuild's own consumer).
    const { producer } = await connectedClients(testKafka());
    await producer.send({
      topic: fixture.topics.articles,
      messages: [
        { key: 'a-1', value: '{"not json' },
        { key: 'a-2', value: JSON.stringify(orderCreated({ order_id: 9001 })) },
      ],
    });
    await producer.send({ topic: fixture.topics.orders, messages: [{ key: 'o-1', value: '' }] });
    await producer.disconnect();

    const port = portOf();
    let threads = 0;
    const rebuildInto = (name: string, split: boolean): ReturnType<typeof rebuildModel> =>
      rebuildModel({
        port,
        topics: fixture.topics,
        files: new ModelFiles(join(dir, name)),
        groupId: `split-${name}`,
        logger,
        ...(split ? { articlesThread: { config: fixture.config, onThread: () => (threads += 1) } } : {}),
      });
    const whole = await rebuildInto('whole', false);
    const split = await rebuildInto('split', true);
    await port.close();

    expect(threads).toBe(1);
    expect(split.done).toBe(whole.done);
    // Where the time went: both parts' ends within consuming, and the phases within the whole.
    const { consume, reached, join: joining, finish } = split.phasesMs;
    expect(Object.keys(reached).sort()).toEqual(['articles', 'main']);
    for (const at of Object.values(reached)) expect(at).toBeLessThanOrEqual(consume);
    expect(Math.min(joining, finish)).toBeGreaterThanOrEqual(0);
    expect(consume + joining + finish).toBeLessThanOrEqual(split.durationMs);
    expect(consume).toBeGreaterThan(0);
    expect(Object.keys(whole.phasesMs.reached)).toEqual(['main']);
    expect(split.deadLetters).toBe(3);
    expect(whole.deadLetters).toBe(3);
    const open = (file: string): Database.Database => new Database(file, { readonly: true });
    const [a, b] = [open(whole.file), open(split.file)];
    const wholeDump = dumpModel(a);
    expect(wholeDump['articles']!.length).toBeGreaterThan(0);
    expect(dumpModel(b)).toEqual(wholeDump);
    a.close();
    b.close();
    expect(lettersAndPositions(split.file)).toEqual(lettersAndPositions(whole.file));
    // The thread's file was joined and removed: only the finished model is left.
    expect(readdirSync(join(dir, 'split')).filter((name) => name.includes('.sqlite'))).toEqual([
      split.file.split('/').pop(),
    ]);
  });

  it("keeps the rebuild command's stdout for its answer: the articles thread logs to stderr", async () => {
    const fixture = await serviceFixture({ orders: 100 });
    const child = spawn(process.execPath, serviceArgv(['rebuild', '--no-promote']), {
      env: { ...fixture.env, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.resume();
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, stdout).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines.filter((line) => !/^(Rebuilt \d+ messages|Not proposed)/.test(line))).toEqual([]);
    expect(lines[0]).toMatch(/^Rebuilt \d+ messages/);
    // It says where the time went: each part's end, the join, the indexes.
    expect(lines[0]).toMatch(
      /Consuming took [\d.]+ s \(the orders' part done after [\d.]+ s, the articles' thread after [\d.]+ s\), joining [\d.]+ s, indexes and sync [\d.]+ s\.$/,
    );
  });

  it('fails, and leaves no file behind, when the articles thread dies', async () => {
    const fixture = await serviceFixture({ orders: 400 });
    const port = portOf();
    const files = new ModelFiles(join(dir, 'dies'));
    let thread: ProjectorThread | null = null;
    const rebuilding = rebuildModel({
      port,
      topics: fixture.topics,
      files,
      groupId: 'split-dies',
      logger,
      // ended as a crash would, as soon as it has started
      articlesThread: {
        config: fixture.config,
        onThread: (started) => {
          thread = started;
          void started.terminate();
        },
      },
    });
    await expect(rebuilding).rejects.toBeInstanceOf(ProjectorThreadFailed);
    await port.close();
    expect(thread).not.toBeNull();
    expect(files.abandonedBuilds()).toEqual([]);
    expect(readdirSync(join(dir, 'dies')).filter((name) => name.includes('.sqlite'))).toEqual([]);
  });
});

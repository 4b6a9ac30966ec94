/**
 * What real producers write: kcat (librdkafka, a producer this project did not write) publishes one
 * history once per codec into a set of topics of its own, and once with the codecs mixed within each
 * partition. Every model, projected live and rebuilt, equals the model of the uncompressed topics.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import type { TopicRole } from '../../schemas/streams.js';
import { messageKeyOf, topicRoleOf } from '../../src/kafka/publisher.js';
import { rebuildModel } from '../../src/projector/rebuild.js';
import { codecNames, type CodecName } from '../../src/kafka/codecs.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf } from '../helpers/api.js';
import { connectedClients, createContractTopics, testKafka, uniqueTopicName } from '../helpers/kafka.js';
import { projectUntilCaughtUp } from '../helpers/projection.js';
import { dumpModel, ordersOnly } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';
import { tempDir } from '../helpers/temp.js';

const brokers = (): string => inject('kafkaBrokers');
const logger = pino({ level: 'silent' });

/** Publishes `lines` (`key<TAB>value`) to `topic` with kcat, compressed with `codec`. */
function kcat(topic: string, codec: CodecName, lines: string[]): void {
  const run = spawnSync(
    'kcat',
    ['-P', '-b', brokers(), '-t', topic, '-z', codec, '-K', '\t', '-X', 'enable.idempotence=true'],
    {
      input: `${lines.join('\n')}\n`,
      encoding: 'utf8',
    },
  );
  if (run.error !== undefined || run.status !== 0) {
    throw new Error(
      `kcat failed (is the Debian package kcat installed? .ci/run installs it): ${run.error?.message ?? ''}${run.stderr}`,
    );
  }
}

describe('compressed topics written by kcat', () => {
  const dir = tempDir('codecs');

  it('projects and rebuilds the same model from every codec, and from codecs mixed within a partition', async () => {
    const { admin } = await connectedClients(testKafka());
    const { history } = seededLog(61, { orgs: 4, orders: 60, events: 1200, garbage: 0 });
    const events = [issueKeyOf(1), ...history];
    const byRole = new Map<TopicRole, string[]>();
    for (const event of events) {
      const role = topicRoleOf(event);
      byRole.set(role, [...(byRole.get(role) ?? []), `${messageKeyOf(event)}\t${JSON.stringify(event)}`]);
    }

    const sets: { name: string; topics: Record<TopicRole, string> }[] = [];
    for (const codec of codecNames) {
      const topics = await createContractTopics(admin);
      for (const [role, lines] of byRole) kcat(topics[role], codec, lines);
      sets.push({ name: codec, topics });
    }
    const mixed = await createContractTopics(admin);
    for (const [role, lines] of byRole) {
      const chunk = Math.ceil(lines.length / codecNames.length);
      codecNames.forEach((codec, i) => kcat(mixed[role], codec, lines.slice(i * chunk, (i + 1) * chunk)));
    }
    sets.push({ name: 'mixed', topics: mixed });

    const reference = dumpModel(await projectUntilCaughtUp(sets[0]!.topics, join(dir, 'none.sqlite')));
    expect(reference['orders']!.length).toBeGreaterThan(0);
    for (const set of sets) {
      const live = await projectUntilCaughtUp(set.topics, join(dir, `${set.name}-live.sqlite`));
      expect(dumpModel(live), `${set.name}, projected`).toEqual(reference);
      live.close();
      const files = new ModelFiles(join(dir, `${set.name}-data`));
      const port = kafkajsPort({
        brokers: brokers().split(','),
        clientId: 'codecs-rebuild',
        sessionTimeoutMs: 6000,
        logger,
      });
      const rebuilt = await rebuildModel({
        port,
        topics: set.topics,
        files,
        groupId: uniqueTopicName('codecs-rebuild'),
        logger,
      });
      await port.close();
      const db = new Database(rebuilt.file, { readonly: true });
      // a rebuild builds an orders model: the keys topic feeds the keys store alone
      expect(dumpModel(db), `${set.name}, rebuilt`).toEqual(ordersOnly(reference));
      db.close();
    }
  }, 300_000);

  it('publishes with every codec through the adapter and reads it back', async () => {
    const { admin } = await connectedClients(testKafka());
    const { history } = seededLog(62, { orgs: 2, orders: 20, events: 300, garbage: 0 });
    let reference: unknown = null;
    for (const compression of codecNames) {
      const topics = await createContractTopics(admin);
      const port = kafkajsPort({
        brokers: brokers().split(','),
        clientId: 'codecs-publish',
        sessionTimeoutMs: 6000,
        logger,
        compression,
      });
      await port.publish(
        history.map((event) => ({
          topic: topics[topicRoleOf(event)],
          key: messageKeyOf(event),
          value: JSON.stringify(event),
        })),
      );
      await port.close();
      const db = await projectUntilCaughtUp(topics, join(dir, `published-${compression}.sqlite`));
      reference ??= dumpModel(db);
      expect(dumpModel(db), compression).toEqual(reference);
      db.close();
    }
  });
});

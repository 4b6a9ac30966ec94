import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventDataSchemas, type EventType } from '../../schemas/events.js';
import {
  defaultTopicNames,
  orderModelRoles,
  perStream,
  streamRoles,
  streams,
  topicRoleOfType,
  topicVariables,
} from '../../schemas/streams.js';
import { loadConfig } from '../../src/config.js';
import type { ConsumeOptions } from '../../src/kafka/port.js';
import { keysStoreRoles } from '../../src/keys/keys-options.js';
import { subscribedTopics } from '../../src/projector/subscriptions.js';
import { contractTopicNames } from '../../tools/harness.js';
import { loopbackServiceEnv } from '../../tools/service-env.js';
import { waitUntil } from '../helpers/kafka.js';
import { lifecycleFixture, type LifecycleFixture } from '../helpers/lifecycle.js';
import { testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('streams');
const running: LifecycleFixture[] = [];
afterEach(async () => {
  for (const f of running.splice(0)) await f.lifecycle.stop();
});

const roleOfTestTopic = new Map(streamRoles.map((role) => [testTopics[role], role]));

describe('the stream registry (schemas/streams.ts)', () => {
  it("has every declared stream consumed by the service's consumers, each by one of them only", async () => {
    // The served orders model's projector and the keys store's consumer, as a replica starts them:
    // whatever each subscribes to is recorded where it reaches the broker.
    const f = lifecycleFixture(join(root, 'consumed'));
    running.push(f);
    const subscriptions: (readonly string[])[] = [];
    const consume = f.kafka.consume.bind(f.kafka);
    f.kafka.consume = (options: ConsumeOptions) => {
      subscriptions.push(options.topics);
      return consume(options);
    };
    f.lifecycle.start();
    await waitUntil('the orders model and the keys store subscribe', () => subscriptions.length >= 2, 10_000);

    const roles = subscriptions.map((topics) => topics.map((topic) => roleOfTestTopic.get(topic)));
    // each consumer feeds one store, and between them they read every declared stream
    for (const consumer of roles) {
      expect(new Set(consumer.map((role) => role && streams[role].store)).size, String(consumer)).toBe(1);
    }
    expect(new Set(roles.flat())).toEqual(new Set(streamRoles));
  });

  it("joins the orders model's and the keys store's subscriptions into every stream, once", () => {
    const topics = loadConfig({}).topics;
    const subscribed = [
      ...subscribedTopics(topics, orderModelRoles),
      ...subscribedTopics(topics, keysStoreRoles),
    ];
    expect(subscribed.sort()).toEqual(Object.values(topics).sort());
  });

  it('subscribes keys first, then status, orders and articles (a fetch fills its budget in this order)', () => {
    expect(subscribedTopics(defaultTopicNames, streamRoles)).toEqual([
      'pr.api-keys',
      'pr.order-status',
      'pr.orders',
      'pr.articles',
    ]);
  });

  it('has each event type carried by exactly one stream', () => {
    const carried = streamRoles.flatMap((role) => [...streams[role].types]);
    expect(carried.sort()).toEqual((Object.keys(eventDataSchemas) as EventType[]).sort());
    for (const role of streamRoles) {
      for (const type of streams[role].types) expect(topicRoleOfType.get(type)).toBe(role);
    }
  });

  it('reads each stream from its own variable, defaulting to its declared name', () => {
    const variables = streamRoles.map((role) => streams[role].variable);
    expect(new Set(variables).size).toBe(streamRoles.length);
    expect(new Set(Object.values(defaultTopicNames)).size).toBe(streamRoles.length);
    expect(loadConfig({}).topics).toEqual(defaultTopicNames);
    for (const role of streamRoles) {
      expect(loadConfig({ [streams[role].variable]: 'renamed' }).topics[role]).toBe('renamed');
    }
    const named = perStream((role) => `t.${role}`);
    expect(loadConfig(topicVariables(named)).topics).toEqual(named);
  });

  it("starts tools' services on every declared stream's topic", () => {
    const topics = contractTopicNames('x');
    expect(topics).toEqual(perStream((role) => `x.${streams[role].defaultTopic}`));
    const env = loopbackServiceEnv({ brokers: 'b:1', groupId: 'g', topics, dataDir: 'd' });
    expect(loadConfig(env).topics).toEqual(topics);
  });
});

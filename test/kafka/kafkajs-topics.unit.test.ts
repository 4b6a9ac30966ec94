/**
 * The wait for leaders after creating topics: "not yet" answers from the metadata are waited out,
 * anything else fails at once, and the wait is bounded. The broker's side runs in every
 * integration test, which creates its topics through this function.
 */
import { describe, expect, it } from 'vitest';
import type { Admin } from '../../src/kafka/kafkajs-client.js';
import { createTopicsWithLeaders } from '../../src/kafka/kafkajs-topics.js';

type Answer = Error | { name: string; leaders: number[] }[];

/** An admin whose metadata gives the answers in turn (the last one from then on). */
function scriptedAdmin(answers: Answer[]): { admin: Admin; created: unknown[]; polls: () => number } {
  const created: unknown[] = [];
  let polls = 0;
  const admin = {
    createTopics: (request: unknown) => {
      created.push(request);
      return Promise.resolve(true);
    },
    fetchTopicMetadata: () => {
      const answer = answers[Math.min(polls, answers.length - 1)]!;
      polls += 1;
      if (answer instanceof Error) return Promise.reject(answer);
      return Promise.resolve({
        topics: answer.map(({ name, leaders }) => ({
          name,
          partitions: leaders.map((leader, partitionId) => ({
            partitionId,
            leader,
            partitionErrorCode: leader >= 0 ? 0 : 5,
            replicas: [],
            isr: [],
          })),
        })),
      });
    },
  } as unknown as Admin;
  return { admin, created, polls: () => polls };
}

function kafkaError(type: string, cause?: Error): Error {
  return Object.assign(new Error(type), { type, cause });
}

const twoTopics = [
  { topic: 'a', numPartitions: 2 },
  { topic: 'b', numPartitions: 1 },
];

describe('createTopicsWithLeaders', () => {
  it('waits out an unknown topic, a missing partition and a partition without a leader', async () => {
    const { admin, created, polls } = scriptedAdmin([
      kafkaError('UNKNOWN_TOPIC_OR_PARTITION'),
      kafkaError('KafkaJSNumberOfRetriesExceeded', kafkaError('LEADER_NOT_AVAILABLE')),
      [
        { name: 'a', leaders: [1] },
        { name: 'b', leaders: [1] },
      ],
      [
        { name: 'a', leaders: [1, -1] },
        { name: 'b', leaders: [1] },
      ],
      [
        { name: 'a', leaders: [1, 1] },
        { name: 'b', leaders: [1] },
      ],
    ]);
    await createTopicsWithLeaders(admin, twoTopics, 5_000, 1);
    expect(polls()).toBe(5);
    expect(created).toEqual([{ waitForLeaders: false, topics: twoTopics }]);
  });

  it('fails at once on an error that does not mean "not yet"', async () => {
    const { admin, polls } = scriptedAdmin([kafkaError('TOPIC_AUTHORIZATION_FAILED')]);
    await expect(createTopicsWithLeaders(admin, twoTopics, 5_000, 1)).rejects.toThrow(
      'TOPIC_AUTHORIZATION_FAILED',
    );
    expect(polls()).toBe(1);
  });

  it('fails after the deadline, naming the topics still without leaders', async () => {
    const { admin, polls } = scriptedAdmin([
      [
        { name: 'a', leaders: [1, 1] },
        { name: 'b', leaders: [-1] },
      ],
    ]);
    await expect(createTopicsWithLeaders(admin, twoTopics, 50, 5)).rejects.toThrow(
      'topics created, but without a leader for every partition after 50 ms: b',
    );
    expect(polls()).toBeGreaterThan(1);
  });

  it('asks nothing of the broker for no topics', async () => {
    const { admin, created, polls } = scriptedAdmin([kafkaError('UNKNOWN_TOPIC_OR_PARTITION')]);
    await createTopicsWithLeaders(admin, [], 50, 5);
    expect([created.length, polls()]).toEqual([0, 0]);
  });
});

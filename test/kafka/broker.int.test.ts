import { describe, expect, it } from 'vitest';
import { connectedClients, createTestTopics, testKafka, uniqueTopicName } from '../helpers/kafka.js';

describe('the test broker', () => {
  it('delivers produced messages to a kafkajs consumer group, in order per partition', async () => {
    const kafka = testKafka();
    const { admin, producer } = await connectedClients(kafka);
    const [topic] = await createTestTopics(admin, ['roundtrip'], 1);
    const values = Array.from({ length: 20 }, (_, i) => `message-${i}`);
    await producer.send({ topic: topic!, messages: values.map((value) => ({ key: 'k', value })) });

    const consumer = kafka.consumer({ groupId: uniqueTopicName('group') });
    await consumer.connect();
    await consumer.subscribe({ topic: topic!, fromBeginning: true });
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      consumer
        .run({
          eachMessage: ({ message }) => {
            received.push(message.value?.toString() ?? '');
            if (received.length === values.length) resolve();
            return Promise.resolve();
          },
        })
        .catch(reject);
    });
    await consumer.disconnect();

    expect(received).toEqual(values);
  });
});

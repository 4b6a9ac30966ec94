/**
 * Closing the Kafka port never waits for the broker longer than the goodbye bound, even while a
 * client is still connecting to a broker that accepts connections and answers nothing (a frozen
 * broker: SIGSTOP leaves the kernel accepting). A shutdown must not wait out kafkajs's retries.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { goodbyeTimeoutMs } from '../../src/kafka/goodbye.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';
import { silentBroker } from '../helpers/silent-broker.js';

const silent = await silentBroker();

describe('closing the Kafka port', () => {
  it('ends within the goodbye bound while a client is still connecting to a broker that answers nothing', async () => {
    const port = kafkajsPort({
      brokers: [silent.address],
      clientId: 'close-test',
      sessionTimeoutMs: 10_000,
      logger: pino({ level: 'silent' }),
    });
    // a lag check: the admin client starts connecting and gets no answer
    const lagCheck = port.endOffsets(['any-topic']).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(silent.sockets.size).toBeGreaterThan(0);
    const started = Date.now();
    await port.close();
    expect(Date.now() - started).toBeLessThan(goodbyeTimeoutMs + 1500);
    void lagCheck;
  });
});

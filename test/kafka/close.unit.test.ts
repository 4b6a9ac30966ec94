/**
 * Closing the Kafka port never waits for the broker longer than the goodbye bound, even while a
 * client is still connecting to a broker that accepts connections and answers nothing (a frozen
 * broker: SIGSTOP leaves the kernel accepting). A shutdown must not wait out kafkajs's retries.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { goodbyeTimeoutMs } from '../../src/kafka/goodbye.js';
import { kafkajsPort } from '../../src/kafka/kafkajs-adapter.js';

const sockets = new Set<Socket>();
const silent: Server = createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => undefined);
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

describe('closing the Kafka port', () => {
  it('ends within the goodbye bound while a client is still connecting to a broker that answers nothing', async () => {
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    const port = kafkajsPort({
      brokers: [`127.0.0.1:${address.port}`],
      clientId: 'close-test',
      sessionTimeoutMs: 10_000,
      logger: pino({ level: 'silent' }),
    });
    // a lag check: the admin client starts connecting and gets no answer
    const lagCheck = port.endOffsets(['any-topic']).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sockets.size).toBeGreaterThan(0);
    const started = Date.now();
    await port.close();
    expect(Date.now() - started).toBeLessThan(goodbyeTimeoutMs + 1500);
    void lagCheck;
  });
});

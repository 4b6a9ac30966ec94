/**
 * The patched kafkajs request queue (patches/kafkajs+2.2.4.patch) arms no timer while nothing is
 * pending: kafkajs 2.2.4 re-armed one of at most 0 ms for ever on every connection, which kept an
 * idle replica's threads busy (`npm run bench:idle-cpu`). Requests held back by a broker's throttle
 * are still sent once it ends.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

interface QueuedRequest {
  entry: {
    correlationId: number;
    apiKey: number;
    apiName: string;
    apiVersion: number;
    resolve: () => void;
    reject: () => void;
  };
  expectResponse: boolean;
  sendRequest: () => void;
}
interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: QueuedRequest): void;
  checkPendingRequests(): void;
  destroy(): void;
}
type RequestQueueClass = new (options: Record<string, unknown>) => RequestQueue;

const require = createRequire(import.meta.url);
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as RequestQueueClass;
const silentLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

function queue(): RequestQueue {
  return new RequestQueue({
    maxInFlightRequests: null,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'request-queue-test',
    broker: 'localhost:9092',
    logger: silentLogger,
  });
}

const request = (correlationId: number, sent: number[]): QueuedRequest => ({
  entry: { correlationId, apiKey: 1, apiName: 'Fetch', apiVersion: 11, resolve: () => {}, reject: () => {} },
  expectResponse: false,
  sendRequest: () => sent.push(correlationId),
});

describe('the request queue of the patched kafkajs', () => {
  it('arms no timer when nothing is pending, throttled or not', () => {
    const idle = queue();
    idle.checkPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();
    idle.throttledUntil = Date.now() + 60_000;
    idle.checkPendingRequests();
    expect(idle.throttleCheckTimeoutId).toBeNull();
  });

  it('sends a request held back by a throttle once the throttle ends, then arms nothing', async () => {
    const throttled = queue();
    const sent: number[] = [];
    throttled.throttledUntil = Date.now() + 50;
    throttled.push(request(1, sent));
    expect(sent).toEqual([]);
    expect(throttled.pending).toHaveLength(1);
    expect(throttled.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(sent).toEqual([1]);
    expect(throttled.pending).toHaveLength(0);
    expect(throttled.throttleCheckTimeoutId).toBeNull();
    throttled.push(request(2, sent));
    expect(sent).toEqual([1, 2]);
    throttled.destroy();
  });
});

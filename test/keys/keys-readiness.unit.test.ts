import { describe, expect, it } from 'vitest';
import { keysReadiness, type KeysReadinessInput } from '../../src/keys/keys-readiness.js';

const now = 100_000;
const ready: KeysReadinessInput = {
  now,
  lastReadAt: now - 2000,
  consumer: { running: true, failures: 0, lastError: null, retryAt: null },
  stallMs: 2000,
  lag: { at: now, partitions: [{ topic: 'keys', partition: 0, nextOffset: 5, endOffset: 6, lag: 1 }] },
  readyMaxLag: 1,
  unreadable: [],
};

describe('what the keys need for a replica to be ready', () => {
  it('nothing more, when the consumer fetched within the bound and the lag is within READY_MAX_LAG', () => {
    expect(keysReadiness(ready)).toEqual([]);
  });

  it('a consumer that has read the keys topic at least once since the start', () => {
    expect(keysReadiness({ ...ready, lastReadAt: null })).toEqual([
      'the keys consumer has not read the keys topic yet',
    ]);
  });

  it('a consumer that has read the keys topic, whether or not one runs now', () => {
    expect(keysReadiness({ ...ready, lastReadAt: null, consumer: null })).toEqual([
      'the keys consumer has not read the keys topic yet',
    ]);
    expect(keysReadiness({ ...ready, consumer: null })).toEqual([]);
  });

  it('a fetch within the bound: one past it makes the replica unready, naming the cause', () => {
    const consumer = {
      running: false,
      failures: 2,
      lastError: 'the broker is unreachable',
      retryAt: now + 400,
    };
    expect(keysReadiness({ ...ready, lastReadAt: now - 2001, consumer })).toEqual([
      'the keys consumer has not fetched for 3 s (the broker is unreachable); revocations since are not seen',
    ]);
  });

  it('the keys topic measured, and read to within READY_MAX_LAG', () => {
    expect(keysReadiness({ ...ready, lag: null })).toEqual(['keys lag not measured yet']);
    expect(keysReadiness({ ...ready, readyMaxLag: 0 })).toEqual(['keys lag 1 exceeds 0']);
  });

  it('no partition of the keys topic stopped at a batch that cannot be read', () => {
    const batch = {
      topic: 'keys',
      partition: 2,
      offset: 7,
      lastOffset: 9,
      cause: 'zstd',
      retryInMs: 100,
      at: now,
    };
    expect(keysReadiness({ ...ready, unreadable: [batch] })).toEqual([
      'keys partition 2 cannot be read at offset 7 (zstd); keys issued or revoked after it are not seen; to move past it for good: skip-batch --topic keys --partition 2 --from 7 --through 9 --reason TEXT',
    ]);
  });
});

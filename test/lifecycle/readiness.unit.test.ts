import { describe, expect, it } from 'vitest';
import { readiness, type ReadinessInput } from '../../src/lifecycle/readiness.js';

const now = 1_000_000;
const healthy: ReadinessInput = {
  now,
  state: 'live',
  servedIsCurrentVersion: true,
  projector: { running: true, failures: 0, lastError: null, retryAt: null },
  lag: { at: now - 500, partitions: [{ topic: 't', partition: 0, nextOffset: 10, endOffset: 10, lag: 0 }] },
  stalledSince: null,
  readyMaxLag: 100,
  stallTimeoutMs: 30_000,
};

describe('readiness', () => {
  it('is ready when live, of the current version, with a recent lag within the limit', () => {
    expect(readiness(healthy)).toEqual({ ready: true, reasons: [] });
  });

  it('is not ready before the lag was ever measured', () => {
    expect(readiness({ ...healthy, lag: null }).reasons).toEqual(['lag not measured yet']);
  });

  it('is not ready when the last lag measurement is older than the stall timeout', () => {
    const verdict = readiness({ ...healthy, lag: { ...healthy.lag!, at: now - 31_000 } });
    expect(verdict).toEqual({ ready: false, reasons: ['lag could not be measured for 31 s'] });
  });

  it('is not ready while the lag exceeds READY_MAX_LAG, and ready at exactly the limit', () => {
    const lagging = (lag: number): ReadinessInput => ({
      ...healthy,
      lag: { at: now, partitions: [{ topic: 't', partition: 0, nextOffset: 0, endOffset: lag, lag }] },
    });
    expect(readiness(lagging(101)).reasons).toEqual(['lag 101 exceeds 100']);
    expect(readiness(lagging(100)).ready).toBe(true);
  });

  it('names the cause and the next attempt while the projector waits for a restart', () => {
    const verdict = readiness({
      ...healthy,
      state: 'restarting',
      projector: {
        running: false,
        failures: 3,
        lastError: 'the broker is unreachable',
        retryAt: now + 4_200,
      },
    });
    expect(verdict.reasons).toEqual(['the projector is down (the broker is unreachable); next start in 5 s']);
  });

  it('reports a stall only once it has lasted longer than the stall timeout', () => {
    expect(readiness({ ...healthy, stalledSince: now - 30_000 }).ready).toBe(true);
    expect(readiness({ ...healthy, stalledSince: now - 30_001 }).reasons).toEqual([
      'the consumer made no progress for 31 s while lagging',
    ]);
  });

  it('is not ready while serving a model of an older projection version', () => {
    expect(
      readiness({ ...healthy, state: 'catching_up_candidate', servedIsCurrentVersion: false }).reasons,
    ).toEqual(['the served model is of an older projection version; a rebuild is running']);
  });

  it('stays ready while a candidate is caught up behind a current, live served model', () => {
    expect(readiness({ ...healthy, state: 'catching_up_candidate' }).ready).toBe(true);
  });

  it('is not ready while starting or shutting down', () => {
    expect(readiness({ ...healthy, state: 'starting', projector: null }).reasons).toEqual([
      'the projector has not started yet',
    ]);
    expect(readiness({ ...healthy, state: 'stopping' }).reasons).toEqual(['the service is shutting down']);
  });

  it('names a partition stopped at a batch the client cannot read, with offset, cause and next attempt', () => {
    const verdict = readiness({
      ...healthy,
      unreadable: [
        {
          topic: 'pr.orders',
          partition: 2,
          offset: 41,
          lastOffset: 57,
          cause: 'LZ4 compression not implemented',
          retryInMs: 8000,
          at: now - 1000,
        },
      ],
    });
    expect(verdict.reasons).toEqual([
      'pr.orders partition 2 cannot be read at offset 41 (LZ4 compression not implemented); the other partitions go on, this one is read again in 7 s; to move past it for good: skip-batch --topic pr.orders --partition 2 --from 41 --through 57 --reason TEXT',
    ]);
  });
});

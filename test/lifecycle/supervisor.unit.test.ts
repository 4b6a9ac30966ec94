import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/supervision/clock.js';
import type { RunningProjector } from '../../src/projector/projector-handle.js';
import { Supervisor, type RestartReason } from '../../src/supervision/supervisor.js';

/** A clock whose sleeps are recorded and end when the test says so. */
function manualClock(): Clock & { sleeps: number[]; wakeAll: () => void } {
  const waiting: (() => void)[] = [];
  return {
    sleeps: [],
    now: () => 0,
    sleep(ms, wake) {
      this.sleeps.push(ms);
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        wake?.addEventListener('abort', () => resolve(), { once: true });
      });
    },
    wakeAll: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}

function projector(
  positions: Map<string, number>,
): RunningProjector & { fail: (e: Error) => void; stopped: boolean } {
  let fail: (e: Error) => void = () => undefined;
  const handle = {
    stopped: false,
    positions: () => positions,
    failed: new Promise<Error>((resolve) => (fail = resolve)),
    pause: () => undefined,
    stop: () => {
      handle.stopped = true;
      return Promise.resolve();
    },
    fail: (e: Error) => fail(e),
  };
  return handle;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('the supervisor', () => {
  it('retries a start that keeps failing with growing delays, reporting each restart, until one succeeds', async () => {
    const clock = manualClock();
    const reasons: RestartReason[] = [];
    let attempts = 0;
    const up = projector(new Map());
    const supervisor = new Supervisor({
      name: 'served',
      clock,
      logger: pino({ level: 'silent' }),
      backoff: { initialMs: 100, maxMs: 400 },
      onRestart: (reason) => reasons.push(reason),
      start: () => {
        attempts += 1;
        return attempts <= 4 ? Promise.reject(new Error('the broker is unreachable')) : Promise.resolve(up);
      },
    });
    supervisor.start();
    for (let i = 0; i < 4; i += 1) {
      await tick();
      expect(supervisor.status()).toMatchObject({ running: false, lastError: 'the broker is unreachable' });
      clock.wakeAll();
    }
    await tick();
    expect(clock.sleeps).toEqual([100, 200, 400, 400]);
    expect(reasons).toEqual(['start_failed', 'start_failed', 'start_failed', 'start_failed']);
    expect(supervisor.running()).toBe(up);
    expect(supervisor.status()).toMatchObject({ running: true, retryAt: null });
    await supervisor.stop();
    expect(up.stopped).toBe(true);
  });

  it('replaces a projector that fails, and starts the backoff over once the failed one had made progress', async () => {
    const clock = manualClock();
    const reasons: RestartReason[] = [];
    const positions = new Map([['0:t', 5]]);
    const handles = [projector(positions), projector(positions), projector(positions)];
    let next = 0;
    const supervisor = new Supervisor({
      name: 'served',
      clock,
      logger: pino({ level: 'silent' }),
      backoff: { initialMs: 100, maxMs: 1000 },
      onRestart: (reason) => reasons.push(reason),
      start: () => Promise.resolve(handles[next++]!),
    });
    supervisor.start();
    await tick();
    handles[0]!.fail(new Error('the projector thread exited with code 1'));
    await tick();
    clock.wakeAll();
    await tick();
    positions.set('0:t', 9);
    handles[1]!.fail(new Error('again'));
    await tick();
    clock.wakeAll();
    await tick();
    expect(reasons).toEqual(['failed', 'failed']);
    expect(clock.sleeps).toEqual([100, 100]);
    expect(supervisor.running()).toBe(handles[2]);
    expect(supervisor.running()?.positions().get('0:t')).toBe(9);
    await supervisor.stop();
  });

  it('restarts a stalled projector at once and stops the old one first', async () => {
    const clock = manualClock();
    const handles = [projector(new Map()), projector(new Map())];
    let next = 0;
    const reasons: RestartReason[] = [];
    const supervisor = new Supervisor({
      name: 'served',
      clock,
      logger: pino({ level: 'silent' }),
      onRestart: (reason) => reasons.push(reason),
      start: () => Promise.resolve(handles[next++]!),
    });
    supervisor.start();
    await tick();
    supervisor.restart('stalled');
    await tick();
    expect(handles[0]!.stopped).toBe(true);
    expect(clock.sleeps).toEqual([0]);
    clock.wakeAll();
    await tick();
    expect(supervisor.running()).toBe(handles[1]);
    expect(reasons).toEqual(['stalled']);
    await supervisor.stop();
  });
});

describe('the supervisor with a start timeout', () => {
  it('gives up a start still under way after the timeout, and starts again', async () => {
    const clock = manualClock();
    const reasons: RestartReason[] = [];
    const signals: AbortSignal[] = [];
    const up = projector(new Map());
    const supervisor = new Supervisor({
      name: 'keys',
      clock,
      logger: pino({ level: 'silent' }),
      backoff: { initialMs: 10, maxMs: 10 },
      startTimeoutMs: 2000,
      start: (signal) => {
        signals.push(signal);
        // the first start hangs (a client joining a group on a broker that does not answer)
        if (signals.length === 1)
          return new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(new Error('given up')), { once: true }),
          );
        return Promise.resolve(up);
      },
      onRestart: (reason) => reasons.push(reason),
    });
    supervisor.start();
    await tick();
    expect(clock.sleeps).toEqual([2000]);
    expect(signals[0]?.aborted).toBe(false);
    clock.wakeAll();
    await tick();
    await tick();
    expect(signals[0]?.aborted).toBe(true);
    expect(reasons).toEqual(['start_failed']);
    clock.wakeAll();
    await tick();
    await tick();
    expect(supervisor.running()).toBe(up);
    await supervisor.stop();
  });
});

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/supervision/clock.js';
import type { Generation } from '../../src/lifecycle/generation.js';
import type { Health } from '../../src/lifecycle/health.js';
import type { LifecycleState, Switching } from '../../src/lifecycle/states.js';
import { switchOver, type SwitchContext } from '../../src/lifecycle/switch.js';
import type { ModelFiles } from '../../src/read-model/files.js';

/** A clock that moves by the time each sleep asks for, at once. */
function steppingClock(): Clock & { slept: number } {
  let now = 0;
  return {
    slept: 0,
    now: () => now,
    sleep(ms) {
      now += ms;
      this.slept += ms;
      return Promise.resolve();
    },
  };
}

interface FakeGeneration {
  file: string;
  currentVersion: boolean;
  positions: Map<string, number>;
  giveWay: boolean | null;
  stopped: number;
  projecting: boolean;
}

function generation(file: string, positions: Record<string, number>, currentVersion = true): FakeGeneration {
  return {
    file,
    currentVersion,
    positions: new Map(Object.entries(positions)),
    giveWay: null,
    stopped: 0,
    projecting: true,
  };
}

/** The parts of a generation the switch uses, over a fake whose positions the test moves. */
function asGeneration(g: FakeGeneration): Generation {
  return {
    file: g.file,
    currentVersion: g.currentVersion,
    positions: () => g.positions,
    storedPositions: () => g.positions,
    setGiveWay: (on: boolean) => (g.giveWay = on),
    stopProjecting: () => {
      g.stopped += 1;
      g.projecting = false;
      return Promise.resolve(true);
    },
    projector: () => (g.projecting ? ({} as ReturnType<Generation['projector']>) : null),
  } as unknown as Generation;
}

function context(overrides: Partial<SwitchContext> = {}): SwitchContext & {
  promoted: string[];
  cleared: string[];
  resumed: string[];
  switchedTo: string[];
  healthSwitched: string[];
} {
  const promoted: string[] = [];
  const cleared: string[] = [];
  const resumed: string[] = [];
  const switchedTo: string[] = [];
  const healthSwitched: string[] = [];
  return {
    files: {
      promote: (file: string) => promoted.push(file),
      clearNext: (file: string) => cleared.push(file),
    } as unknown as ModelFiles,
    clock: steppingClock(),
    logger: pino({ level: 'silent' }),
    stallTimeoutMs: 1000,
    health: { switched: (g: Generation) => healthSwitched.push(g.file) } as unknown as Health,
    stopRequested: new AbortController().signal,
    resumeServed: (g) => resumed.push(g.file),
    switched: (_from, to) => switchedTo.push(to),
    promoted,
    cleared,
    resumed,
    switchedTo,
    healthSwitched,
    ...overrides,
  };
}

function switching(
  served: FakeGeneration,
  candidate: FakeGeneration,
  lock: (() => void) | null = null,
): Switching {
  return { name: 'switching', served: asGeneration(served), candidate: asGeneration(candidate), lock };
}

const fileOf = (state: LifecycleState): string => state.served.file;

describe('the switch', () => {
  it('swaps to a candidate that has reached the served model on every partition, and releases the rebuild lock', async () => {
    const served = generation('served', { '0:orders': 10, '1:orders': 4 });
    const candidate = generation('candidate', { '0:orders': 10, '1:orders': 5 });
    let released = 0;
    const ctx = context();
    const next = await switchOver(
      switching(served, candidate, () => (released += 1)),
      ctx,
    );
    expect(next).toMatchObject({ name: 'catching_up' });
    expect(fileOf(next)).toBe('candidate');
    expect(served.stopped).toBe(1);
    expect(candidate.giveWay).toBe(false);
    expect(ctx.promoted).toEqual(['candidate']);
    expect(ctx.cleared).toEqual(['candidate']);
    expect(ctx.healthSwitched).toEqual(['served']);
    expect(ctx.switchedTo).toEqual(['candidate']);
    expect(ctx.resumed).toEqual([]);
    expect(released).toBe(1);
  });

  it('swaps where nobody listens for switches', async () => {
    const ctx = context();
    delete ctx.switched;
    const next = await switchOver(switching(generation('served', {}), generation('candidate', {})), ctx);
    expect(fileOf(next)).toBe('candidate');
    expect(ctx.promoted).toEqual(['candidate']);
  });

  it('serves a candidate with no running projector as restarting', async () => {
    const candidate = generation('candidate', {});
    candidate.projecting = false;
    const next = await switchOver(switching(generation('served', {}), candidate), context());
    expect(next).toMatchObject({ name: 'restarting' });
  });

  it('never swaps to a candidate behind the served model on any partition: it waits, then gives the served model its projector back', async () => {
    const served = generation('served', { '0:orders': 10, '1:orders': 4 });
    const candidate = generation('candidate', { '0:orders': 10, '1:orders': 3 });
    const ctx = context();
    const next = await switchOver(switching(served, candidate), ctx);
    expect(next).toMatchObject({ name: 'catching_up_candidate', gainMark: null });
    expect(fileOf(next)).toBe('served');
    expect(ctx.promoted).toEqual([]);
    expect(ctx.resumed).toEqual(['served']);
    expect(ctx.switchedTo).toEqual([]);
    expect((ctx.clock as ReturnType<typeof steppingClock>).slept).toBe(1000);
  });

  it('swaps once the candidate reaches the final positions while the switch waits', async () => {
    const served = generation('served', { '0:orders': 10 });
    const candidate = generation('candidate', { '0:orders': 8 });
    const clock = steppingClock();
    const ctx = context({
      clock: {
        now: () => clock.now(),
        sleep: async (ms) => {
          await clock.sleep(ms);
          if (clock.now() >= 100) candidate.positions.set('0:orders', 10);
        },
      },
    });
    const next = await switchOver(switching(served, candidate), ctx);
    expect(fileOf(next)).toBe('candidate');
    expect(ctx.promoted).toEqual(['candidate']);
    expect(clock.now()).toBe(100);
  });

  it('gives up when the service stops while it waits, without giving the served model its projector back', async () => {
    const stop = new AbortController();
    stop.abort();
    const served = generation('served', { '0:orders': 10 });
    const ctx = context({ stopRequested: stop.signal });
    const next = await switchOver(switching(served, generation('candidate', { '0:orders': 2 })), ctx);
    expect(next).toMatchObject({ name: 'catching_up_candidate' });
    expect(ctx.resumed).toEqual([]);
    expect(ctx.promoted).toEqual([]);
  });

  it('does not swap while the service stops, though the candidate has reached the served model', async () => {
    const stop = new AbortController();
    stop.abort();
    const ctx = context({ stopRequested: stop.signal });
    const next = await switchOver(
      switching(generation('served', { '0:orders': 10 }), generation('candidate', { '0:orders': 10 })),
      ctx,
    );
    expect(next).toMatchObject({ name: 'catching_up_candidate' });
    expect(fileOf(next)).toBe('served');
    expect(ctx.promoted).toEqual([]);
    expect(ctx.switchedTo).toEqual([]);
    expect(ctx.resumed).toEqual([]);
  });

  it('stops waiting for the candidate as soon as the service stops', async () => {
    const stop = new AbortController();
    const clock = steppingClock();
    const sleeps: AbortSignal[] = [];
    const ctx = context({
      stopRequested: stop.signal,
      clock: {
        now: () => clock.now(),
        sleep: async (ms, signal) => {
          if (signal !== undefined) sleeps.push(signal);
          await clock.sleep(ms);
          stop.abort();
        },
      },
    });
    const served = generation('served', { '0:orders': 10 });
    const next = await switchOver(switching(served, generation('candidate', { '0:orders': 2 })), ctx);
    expect(next).toMatchObject({ name: 'catching_up_candidate' });
    // one pause of the wait, which the stop cuts short
    expect(sleeps).toEqual([stop.signal]);
    expect(ctx.resumed).toEqual([]);
  });

  it('logs why the candidate was not swapped to, naming it', async () => {
    const lines: unknown[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const ctx = context({ logger });
    await switchOver(switching(generation('served', { '0:orders': 10 }), generation('candidate', {})), ctx);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        candidate: 'candidate',
        msg: 'the candidate did not reach the served model in time; serving and projecting the current one meanwhile',
      }),
    ]);
  });

  it('logs the switch, naming both files', async () => {
    const lines: unknown[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    await switchOver(switching(generation('served', {}), generation('candidate', {})), context({ logger }));
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        from: 'served',
        to: 'candidate',
        msg: 'switched to the caught-up model',
      }),
    ]);
  });

  it('keeps serving and projecting the current model when the swap fails', async () => {
    const ctx = context();
    ctx.files = {
      promote: () => {
        throw new Error('disk full');
      },
      clearNext: () => undefined,
    } as unknown as ModelFiles;
    const lines: unknown[] = [];
    ctx.logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const next = await switchOver(switching(generation('served', {}), generation('candidate', {})), ctx);
    expect(next).toMatchObject({ name: 'catching_up_candidate' });
    expect(fileOf(next)).toBe('served');
    expect(ctx.resumed).toEqual(['served']);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        err: expect.objectContaining({ message: 'disk full' }) as unknown,
        msg: 'switching to the caught-up model failed; trying again',
      }),
    ]);
  });

  it('does not give a served model of an older projection version a projector back', async () => {
    const served = generation('served', { '0:orders': 10 }, false);
    const ctx = context();
    const next = await switchOver(switching(served, generation('candidate', { '0:orders': 1 })), ctx);
    expect(fileOf(next)).toBe('served');
    expect(ctx.resumed).toEqual([]);
  });
});

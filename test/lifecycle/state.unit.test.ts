import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  allowedTransitions,
  checkTransition,
  InvalidTransition,
  serviceStates,
  type ServiceState,
} from '../../src/lifecycle/states.js';
import { lifecycleBlock, lifecycleDocPath, withLifecycle } from '../../tools/lifecycle-diagram.js';

/**
 * The table as this test knows it, written out apart from the code's: a transition the code starts
 * allowing fails its own test below, instead of leaving the list of refused ones.
 */
const expectedTable: Record<ServiceState, readonly ServiceState[]> = {
  starting: ['catching_up', 'restarting', 'catching_up_candidate', 'stopping'],
  catching_up: ['live', 'restarting', 'catching_up_candidate', 'stopping'],
  live: ['catching_up', 'restarting', 'catching_up_candidate', 'stopping'],
  restarting: ['catching_up', 'catching_up_candidate', 'stopping'],
  catching_up_candidate: ['switching', 'stopping'],
  switching: ['catching_up', 'restarting', 'catching_up_candidate'],
  stopping: ['stopped'],
  stopped: [],
};
const pairs = serviceStates.flatMap((from) => serviceStates.map((to) => ({ from, to })));
const refused = pairs.filter(({ from, to }) => from !== to && !expectedTable[from].includes(to));
const allowed = pairs.filter(({ from, to }) => from !== to && expectedTable[from].includes(to));

describe('service states', () => {
  it('allows no way out of stopped and only stopped after stopping', () => {
    expect(allowedTransitions.stopped).toEqual([]);
    expect(allowedTransitions.stopping).toEqual(['stopped']);
    for (const state of serviceStates) expect(allowedTransitions[state]).not.toContain('starting');
  });

  it.each(refused)(
    'refuses $from → $to: it throws where strict, and is refused otherwise',
    ({ from, to }) => {
      expect(() => checkTransition(from, to, true)).toThrow(InvalidTransition);
      expect(checkTransition(from, to, false)).toBe(false);
    },
  );

  it.each(allowed)('allows $from → $to', ({ from, to }) => {
    expect(checkTransition(from, to, true)).toBe(true);
  });

  it(`refuses ${refused.length} transitions and allows ${allowed.length}: no other`, () => {
    expect(allowedTransitions).toEqual(expectedTable);
  });

  it('lets a state change what it holds without a transition', () => {
    for (const state of serviceStates) expect(checkTransition(state, state, true)).toBe(true);
  });

  it('is stopped from every running state, and only by stopping', () => {
    const running: ServiceState[] = [
      'starting',
      'catching_up',
      'live',
      'restarting',
      'catching_up_candidate',
    ];
    for (const state of running) expect(allowedTransitions[state]).toContain('stopping');
  });
});

describe('the state table and diagram of docs/architecture.md', () => {
  it('match the table in states.ts (run `npm run contracts` after changing it)', async () => {
    const committed = readFileSync(lifecycleDocPath, 'utf8');
    expect(committed).toContain(lifecycleBlock().split('\n')[0]);
    expect(committed).toBe(await withLifecycle(committed));
  }, 60_000);
});

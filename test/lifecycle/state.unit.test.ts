import { describe, expect, it } from 'vitest';
import {
  allowedTransitions,
  serviceState,
  ServiceStateMachine,
  serviceStates,
  type StateFacts,
} from '../../src/lifecycle/state.js';

const facts: StateFacts = {
  stopping: false,
  stopped: false,
  switching: false,
  candidate: false,
  projectorRunning: true,
  totalLag: 0,
  readyMaxLag: 10,
};

describe('service states', () => {
  it('derives each state from the facts', () => {
    expect(serviceState({ ...facts, projectorRunning: null })).toBe('starting');
    expect(serviceState(facts)).toBe('live');
    expect(serviceState({ ...facts, totalLag: 11 })).toBe('catching_up');
    expect(serviceState({ ...facts, totalLag: null })).toBe('catching_up');
    expect(serviceState({ ...facts, projectorRunning: false })).toBe('restarting');
    expect(serviceState({ ...facts, candidate: true })).toBe('rebuilding');
    expect(serviceState({ ...facts, candidate: true, switching: true })).toBe('switching');
    expect(serviceState({ ...facts, switching: true, stopping: true })).toBe('stopping');
    expect(serviceState({ ...facts, stopping: true, stopped: true })).toBe('stopped');
  });

  it('allows no way out of stopped and only stopped after stopping', () => {
    expect(allowedTransitions.stopped).toEqual([]);
    expect(allowedTransitions.stopping).toEqual(['stopped']);
    for (const state of serviceStates) expect(allowedTransitions[state]).not.toContain('starting');
  });

  it('tells the listener of each change and flags one the table does not allow', () => {
    const seen: string[] = [];
    const machine = new ServiceStateMachine((from, to, allowed) => seen.push(`${from}>${to}:${allowed}`));
    machine.update('catching_up');
    machine.update('catching_up');
    machine.update('live');
    machine.update('stopping');
    machine.update('live');
    expect(seen).toEqual([
      'starting>catching_up:true',
      'catching_up>live:true',
      'live>stopping:true',
      'stopping>live:false',
    ]);
    expect(machine.invalidTransitions).toBe(1);
  });
});

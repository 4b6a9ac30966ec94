import { pino } from 'pino';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Generation } from '../../src/lifecycle/generation.js';
import { LifecycleMachine } from '../../src/lifecycle/machine.js';
import { Mailbox } from '../../src/lifecycle/mailbox.js';
import { InvalidTransition, type ServiceState } from '../../src/lifecycle/states.js';
import { tempDir } from '../helpers/temp.js';

const served = Generation.open(join(tempDir('machine'), 'model.sqlite'), new Set());
afterAll(() => served.close());
const logger = pino({ level: 'silent' });

function machine(strictTransitions: boolean): {
  machine: LifecycleMachine;
  seen: { from: ServiceState; to: ServiceState; allowed: boolean }[];
} {
  const seen: { from: ServiceState; to: ServiceState; allowed: boolean }[] = [];
  const m = new LifecycleMachine({
    logger,
    strictTransitions,
    events: { stateChanged: (from, to, allowed) => seen.push({ from, to, allowed }) },
  });
  return { machine: m, seen };
}

describe('the lifecycle machine', () => {
  it('refuses a transition outside the table in production: the state stays, and the refusal is reported', () => {
    const { machine: m, seen } = machine(false);
    m.begin({ name: 'stopped', served });
    m.moveTo({ name: 'live', served });
    expect(m.current.name).toBe('stopped');
    expect(seen).toEqual([{ from: 'stopped', to: 'live', allowed: false }]);
  });

  it('throws on a transition outside the table where transitions are strict', () => {
    const { machine: m } = machine(true);
    m.begin({ name: 'live', served });
    expect(() => m.moveTo({ name: 'switching', served, candidate: served, lock: null })).toThrow(
      InvalidTransition,
    );
    expect(m.current.name).toBe('live');
  });

  it('reports each change of name once', () => {
    const { machine: m, seen } = machine(true);
    m.begin({ name: 'starting', served });
    m.moveTo({ name: 'catching_up', served });
    m.moveTo({ name: 'catching_up', served });
    m.moveTo({ name: 'live', served });
    expect(seen.map((t) => `${t.from}>${t.to}:${t.allowed}`)).toEqual([
      'starting>catching_up:true',
      'catching_up>live:true',
    ]);
  });
});

describe('the mailbox', () => {
  it('handles commands one at a time: an await in one is not overtaken by another', async () => {
    const mailbox = new Mailbox(() => undefined);
    const order: string[] = [];
    let release: () => void = () => undefined;
    const first = mailbox.post('first', async () => {
      order.push('first begins');
      await new Promise<void>((resolve) => (release = resolve));
      order.push('first ends');
    });
    const second = mailbox.post('second', () => order.push('second'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual(['first begins']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first begins', 'first ends', 'second']);
  });

  it('runs a command posted while none is pending in the caller tick, and goes on after one that fails', async () => {
    const errors: string[] = [];
    const mailbox = new Mailbox((name) => errors.push(name));
    let ran = false;
    void mailbox.post('now', () => (ran = true));
    expect(ran).toBe(true);
    await expect(mailbox.post('fails', () => Promise.reject(new Error('broken')))).rejects.toThrow('broken');
    expect(await mailbox.post('after', () => 'ok')).toBe('ok');
    expect(errors).toEqual(['fails']);
  });

  it('makes a command posted by a running command wait for it, and those posted later wait for both', async () => {
    const mailbox = new Mailbox(() => undefined);
    const order: string[] = [];
    let release: () => void = () => undefined;
    mailbox.send('outer', () => {
      order.push('outer');
      mailbox.send('inner', async () => {
        order.push('inner begins');
        await new Promise<void>((resolve) => (release = resolve));
        order.push('inner ends');
      });
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = mailbox.post('later', () => order.push('later'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(order).toEqual(['outer', 'inner begins']);
    release();
    await later;
    expect(order).toEqual(['outer', 'inner begins', 'inner ends', 'later']);
  });
});

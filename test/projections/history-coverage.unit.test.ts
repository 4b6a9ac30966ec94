/**
 * The property tests of convergence, isolation and paging draw their events from `historyArbitrary`.
 * An event type it never draws is never checked by any of them, and no test would say so: this one
 * does, against every type of the event contract.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventDataSchemas } from '../../schemas/events.js';
import { streamRoles } from '../../schemas/streams.js';
import { garbageMessages, kinds } from '../helpers/garbage.js';
import { historyArbitrary } from '../helpers/histories.js';

describe('the histories of the property tests', () => {
  it('draw every event type of the contract', () => {
    const drawn = new Set(
      fc
        .sample(historyArbitrary({ orgs: 2, orders: 4, articles: 4, keys: 2, maxEvents: 40 }), {
          numRuns: 200,
          seed: 46,
        })
        .flat()
        .map((event) => event.type),
    );
    expect([...drawn].sort()).toEqual(Object.keys(eventDataSchemas).sort());
  });
});

describe('the malformed messages of the poison and crash tests', () => {
  it('put every kind of garbage on every stream', () => {
    const count = kinds.length * streamRoles.length;
    const met = new Set(garbageMessages(count).map((message, i) => `${i % kinds.length}:${message.role}`));
    expect(met.size).toBe(count);
  });
});

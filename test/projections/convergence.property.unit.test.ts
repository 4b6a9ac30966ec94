import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deliveryArbitrary, historyArbitrary } from '../helpers/histories.js';
import {
  dumpModel,
  memoryReadModel,
  recomputedDigests,
  recountedCounters,
  storedCounters,
  storedDigests,
} from '../helpers/read-model.js';

describe('convergence of the projection', () => {
  it('yields the same model for any per-key-ordered interleaving with redeliveries as for the canonical order, with counters equal to a recount and digests equal to a recomputation (dumpModel holds them: order-independent)', () => {
    const scenario = historyArbitrary({ orgs: 3, orders: 6, articles: 8, keys: 3, maxEvents: 60 }).chain(
      (history) => fc.tuple(fc.constant(history), deliveryArbitrary(history)),
    );
    fc.assert(
      fc.property(scenario, ([history, delivery]) => {
        const canonical = memoryReadModel();
        canonical.apply(...history);
        const shuffled = memoryReadModel();
        shuffled.apply(...delivery);
        expect(dumpModel(shuffled.db)).toEqual(dumpModel(canonical.db));
        expect(storedCounters(shuffled.db)).toEqual(recountedCounters(shuffled.db));
        expect(storedDigests(shuffled.db)).toEqual(recomputedDigests(shuffled.db));
        canonical.db.close();
        shuffled.db.close();
      }),
      { numRuns: 300 },
    );
    // 300 histories take about 3 s alone; a loaded CI machine may need more than the default 5 s.
  }, 60_000);

  it('yields the same model when a delivery arrives in batches of any size as when each event is its own batch', () => {
    const scenario = historyArbitrary({ orgs: 3, orders: 6, articles: 8, keys: 3, maxEvents: 60 }).chain(
      (history) => fc.tuple(deliveryArbitrary(history), fc.integer({ min: 2, max: 40 })),
    );
    fc.assert(
      fc.property(scenario, ([delivery, size]) => {
        const single = memoryReadModel();
        single.apply(...delivery);
        const batched = memoryReadModel();
        batched.applyInBatches(size, delivery);
        expect(dumpModel(batched.db)).toEqual(dumpModel(single.db));
        expect(storedCounters(batched.db)).toEqual(recountedCounters(batched.db));
        expect(storedDigests(batched.db)).toEqual(recomputedDigests(batched.db));
        single.db.close();
        batched.db.close();
      }),
      { numRuns: 300 },
    );
  }, 60_000);
});

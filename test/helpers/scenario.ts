import fc from 'fast-check';
import type { DomainEvent } from '../../schemas/events.js';
import { garbageMessages } from './garbage.js';
import { deliveryArbitrary, historyArbitrary } from './histories.js';
import type { Publication } from './kafka.js';

/**
 * A seeded, reproducible log: a random history, delivered shuffled across topics
 * with redeliveries, and garbage messages mixed in at random places.
 */
export function seededLog(
  seed: number,
  options: { orgs: number; orders: number; events: number; garbage: number },
): {
  history: DomainEvent[];
  publications: Publication[];
  garbage: { raw: Buffer | null; reason: string }[];
} {
  const [history] = fc.sample(
    historyArbitrary({
      orgs: options.orgs,
      orders: options.orders,
      articles: options.orders * 2,
      keys: options.orgs * 2,
      minEvents: options.events,
      maxEvents: options.events,
    }),
    { seed, numRuns: 1 },
  );
  const [delivery] = fc.sample(deliveryArbitrary(history!), { seed: seed + 1, numRuns: 1 });
  const garbage = garbageMessages(options.garbage);
  const [positions] = fc.sample(
    fc.array(fc.nat({ max: delivery!.length }), { minLength: garbage.length, maxLength: garbage.length }),
    { seed: seed + 2, numRuns: 1 },
  );
  const publications: Publication[] = [...delivery!];
  garbage.forEach((message, i) => publications.splice(positions![i]!, 0, message));
  return { history: history!, publications, garbage };
}

import { describe, expect, it } from 'vitest';
import { listedStatusOf } from '../../projections/orders/status.js';

describe('status mapping', () => {
  it.each([
    ['publishing', 'processing'],
    ['publishing_ended', 'processing'],
    ['finished', 'finished'],
  ] as const)('lists internal status %s as %s', (internal, external) => {
    expect(listedStatusOf(internal)).toBe(external);
  });

  it.each(['draft', 'pending', 'cancelled', 'archived_in_2030', 'Finished', ''])(
    'does not list internal status "%s"',
    (internal) => {
      expect(listedStatusOf(internal)).toBeNull();
    },
  );
});

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { schemaSqlFile } from '../../projections/orders/schema.js';
import { listedStatuses, listedStatusOf } from '../../projections/orders/status.js';
import { ORDER_STATUSES, ORDER_STATUS_FILTERS } from '../../schemas/api.js';

describe('status mapping', () => {
  it.each([
    ['publishing', 'processing'],
    ['publishing_ended', 'processing'],
    ['finished', 'finished'],
  ] as const)('lists internal status %s as %s', (internal, external) => {
    expect(listedStatusOf(internal)).toBe(external);
  });

  it.each(['draft', 'pending', 'cancelled', 'archived_in_2030', 'Finished', '', 'toString', '__proto__'])(
    'does not list internal status "%s"',
    (internal) => {
      expect(listedStatusOf(internal)).toBeNull();
    },
  );
});

describe('the shown statuses, declared once (ORDER_STATUSES)', () => {
  it('are each shown for some internal status, and nothing else is', () => {
    expect([...new Set(Object.values(listedStatuses))].sort()).toEqual([...ORDER_STATUSES].sort());
  });

  it('are what the model may store as listed_status (its CHECK in schema.sql)', () => {
    const check = /listed_status\s+TEXT\s+CHECK\s*\(listed_status IN \(([^)]*)\)\)/.exec(
      readFileSync(schemaSqlFile, 'utf8'),
    );
    expect(check, 'the CHECK of orders.listed_status').not.toBeNull();
    const allowed = check![1]!.split(',').map((value) => value.trim().replace(/^'|'$/g, ''));
    expect(allowed.sort()).toEqual([...ORDER_STATUSES].sort());
  });

  it('are the filters beside all', () => {
    expect(ORDER_STATUS_FILTERS).toEqual(['all', ...ORDER_STATUSES]);
  });
});

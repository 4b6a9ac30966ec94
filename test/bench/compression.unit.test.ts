import { describe, expect, it } from 'vitest';
import { benchCompression } from '../../bench/compression.js';

describe('the compression benchmark', () => {
  it('produces every figure, in miniature', async () => {
    const result = await benchCompression({ orders: 300, minMs: 2, rounds: 1 });
    expect(Object.keys(result.answers)).toHaveLength(7);
    for (const row of Object.values(result.answers))
      for (const cell of Object.values(row)) expect(cell.bytes).toBeGreaterThan(0);
    expect(Object.keys(result.requests)).toEqual(['orders limit=10', 'orders limit=50', 'orders limit=200']);
    for (const row of Object.values(result.requests))
      expect(Object.keys(row)).toEqual([
        'identity',
        'gzip, chosen',
        'br, chosen',
        'gzip, br 4, gzip 6',
        'br, br 4, gzip 6',
      ]);
    for (const row of Object.values(result.requests))
      for (const cell of Object.values(row)) expect(cell.cpuMicrosPerRequest).toBeGreaterThan(0);
  });
});

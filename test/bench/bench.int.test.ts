/** The benchmarks in miniature, so their code cannot rot: they run and produce every figure (no timing thresholds). */
import { describe, expect, inject, it } from 'vitest';
import { runBench } from '../../bench/run.js';

describe('benchmarks (smoke)', () => {
  it('ingest, rebuild and API benchmarks run on a small data set and report every figure with its baseline', async () => {
    process.env['KAFKA_BROKERS'] = inject('kafkaBrokers');
    const figures = await runBench(
      'all',
      { orders: 1500, organizations: 20, largeOrganizationOrders: 300, seed: 1 },
      { measure: 1, warmUp: 1 },
      3000,
    );
    const names = figures.map((f) => f.name);
    for (const expected of [
      'ingest (a)',
      'ingest (a2)',
      'ingest (a3)',
      'ingest (b)',
      'rebuild',
      'api (a)',
      'api (a2)',
      'api (a3)',
      'api (a4)',
      'api (b)',
      'api (c)',
      'api (d)',
      'api (e)',
      'api (f)',
      'service peak RSS',
    ]) {
      expect(
        names.some((n) => n.startsWith(expected)),
        expected,
      ).toBe(true);
    }
    for (const figure of figures.filter((f) => f.baseline !== undefined)) {
      expect(figure.ratio, figure.name).toBeGreaterThan(0);
      expect(figure.value, figure.name).toMatch(/\d/);
    }
  });
});

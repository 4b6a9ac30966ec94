/** The benchmarks in miniature, so their code cannot rot: they run and produce every figure (no timing thresholds). */
import { describe, expect, inject, it } from 'vitest';
import { runBench } from '../../bench/run.js';

describe('benchmarks (smoke)', () => {
  it('ingest, rebuild and API benchmarks run on a small data set and report every figure with its baseline', async () => {
    process.env['KAFKA_BROKERS'] = inject('kafkaBrokers');
    const { figures, results } = await runBench(
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
    // What bench/results/*.json records: every figure as a number.
    const numbers: Record<string, number | undefined> = {
      ...Object.fromEntries(Object.entries(results.ingest).map(([k, v]) => [`ingest.${k}`, v])),
      ...Object.fromEntries(Object.entries(results.rebuild).map(([k, v]) => [`rebuild.${k}`, v])),
      ...Object.fromEntries(Object.entries(results.api).map(([k, v]) => [`api.${k}`, v])),
      peakRssMb: results.peakRssMb,
    };
    for (const field of [
      'ingest.rawEventsPerSecond',
      'ingest.decodeInsertEventsPerSecond',
      'ingest.projectorEventsPerSecond',
      'rebuild.eventsPerSecond',
      'api.barefastifyRps',
      'api.stackCeilingOrdersRps',
      'api.ordersRps',
      'api.ordersP99Ms',
      'api.stackCeilingArticlesRps',
      'api.articlesRps',
      'api.ordersRpsWhileIngesting',
      'peakRssMb',
    ]) {
      expect(numbers[field], field).toBeTypeOf('number');
    }
    for (const figure of figures.filter((f) => f.baseline !== undefined)) {
      expect(figure.ratio, figure.name).toBeGreaterThan(0);
      expect(figure.value, figure.name).toMatch(/\d/);
    }
  });
});

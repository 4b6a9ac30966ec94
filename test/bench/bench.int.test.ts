/** The benchmarks in miniature, so their code cannot rot: they run and produce every figure (no timing thresholds). */
import { describe, expect, inject, it } from 'vitest';
import { endOffsetsVia, kafkaOf, type DataSetOnBroker } from '../../bench/lib.js';
import { runBench } from '../../bench/run.js';
import { topicEndOffsets } from '../../tools/model-progress.js';

describe('benchmarks (smoke)', () => {
  it('ingest, rebuild and API benchmarks run on a small data set and report every figure with its baseline', async () => {
    process.env['KAFKA_BROKERS'] = inject('kafkaBrokers');
    // The full run (bench/full.ts) gives the peer and the workers phases the same data set, before
    // the API phase publishes more events into its topics.
    const shared: DataSetOnBroker[] = [];
    const { figures, results } = await runBench(
      'all',
      { orders: 1500, organizations: 20, largeOrganizationOrders: 300, seed: 1 },
      { measure: 1, warmUp: 1 },
      3000,
      async (dataSet) => {
        shared.push(dataSet);
        const held = await topicEndOffsets(
          endOffsetsVia(kafkaOf(dataSet.brokers)),
          Object.values(dataSet.topics),
        );
        return [{ name: 'shared data set', value: `${held} of ${dataSet.total} messages` }];
      },
    );
    const names = figures.map((f) => f.name);
    expect(shared).toHaveLength(1);
    expect(shared[0]?.messages).toBe(results.messages);
    expect(figures.find((f) => f.name === 'shared data set')?.value).toBe(
      `${shared[0]?.total} of ${shared[0]?.total} messages`,
    );
    expect(names.indexOf('shared data set')).toBeLessThan(names.findIndex((n) => n.startsWith('api (a)')));
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

/**
 * The arithmetic of the benchmarks' rounds (bench/peers/rounds.ts) and their request sequences
 * (bench/peers/wrk.ts): what a goal's worst round and a run's equal load rest on.
 */
import { describe, expect, it } from 'vitest';
import { roundRatios, spread, type Measure, type RoundsResult } from '../../bench/peers/rounds.js';
import { requestSequence } from '../../bench/peers/wrk.js';
import { ratiosToFloor } from '../../bench/floor/ratios.js';

const load = (rps: number, p99Ms: number): Measure =>
  ({ rps, p99Ms, rpsPerCore: rps * 2, serverCpuMicrosPerRequest: 1e6 / (rps * 2) }) as Measure;

describe('rounds', () => {
  it('a spread gives every round in order with their median and range', () => {
    expect(spread([3, 1, 2])).toEqual({ rounds: [3, 1, 2], median: 2, min: 1, max: 3 });
    expect(spread([4, 1, 2, 3]).median).toBe(2.5);
  });

  it('ratios are taken within each round, closed loop or fixed rate, so the worst round shows', () => {
    const result: RoundsResult = {
      warmUp: {},
      offeredRates: [100],
      rounds: [
        {
          order: ['a', 'b'],
          closed: { a: load(300, 1), b: load(100, 2) },
          fixed: { '100': { a: load(100, 1), b: load(100, 4) } },
        },
        {
          order: ['b', 'a'],
          closed: { a: load(150, 1), b: load(100, 2) },
          fixed: { '100': { a: load(100, 3), b: load(100, 2) } },
        },
      ],
    };
    // summed over the rounds the ratio would be 450 / 200 = 2.25; the worst round is 1.5
    expect(roundRatios(result, 'a', 'b', (m) => m.rps)).toEqual({
      rounds: [3, 1.5],
      median: 2.25,
      min: 1.5,
      max: 3,
    });
    expect(roundRatios(result, 'a', 'b', (m) => m.p99Ms, 100).max).toBe(1.5);
  });
});

describe('ratios to the floor', () => {
  const cpu = (micros: number): Measure => ({ serverCpuMicrosPerRequest: micros }) as Measure;

  it('divide each side by the floor of the same round, and judge on the worst round at any fixed rate', () => {
    const result: RoundsResult = {
      warmUp: {},
      offeredRates: [100, 200],
      rounds: [
        {
          order: ['floor', 'service'],
          closed: { floor: cpu(100), service: cpu(150) },
          fixed: {
            '100': { floor: cpu(200), service: cpu(220) },
            '200': { floor: cpu(100), service: cpu(110) },
          },
        },
        {
          order: ['service', 'floor'],
          closed: { floor: cpu(50), service: cpu(100) },
          fixed: {
            '100': { floor: cpu(100), service: cpu(110) },
            '200': { floor: cpu(100), service: cpu(130) },
          },
        },
      ],
    };
    const toFloor = ratiosToFloor(result, ['floor', 'service']);
    expect(Object.keys(toFloor)).toEqual(['service']);
    expect(toFloor['service']!.closed).toEqual({ rounds: [1.5, 2], median: 1.75, min: 1.5, max: 2 });
    expect(toFloor['service']!.atRate['100']!.rounds).toEqual([1.1, 1.1]);
    // the closed loop's 2 is not a fixed rate's: the worst at the rates is round 2's 1.3 at 200 req/s
    expect(toFloor['service']!.worstAtRates).toBe(1.3);
  });
});

describe('request sequences', () => {
  const requests = Array.from({ length: 50 }, (_, i) => ({ path: `/p/${i}`, key: `k${i}` }));

  it('the same seed gives every side the same requests in the same order', () => {
    expect(requestSequence(requests, 1000, 7)).toEqual(requestSequence(requests, 1000, 7));
    expect(requestSequence(requests, 1000, 7)).not.toEqual(requestSequence(requests, 1000, 8));
  });

  it('draws from every request of the load', () => {
    const drawn = new Set(requestSequence(requests, 5000, 7).map((r) => r.path));
    expect(drawn.size).toBe(requests.length);
  });
});

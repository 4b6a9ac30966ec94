/**
 * Every side's figures as ratios to the floor measured in the same round (bench/floor): a side's CPU
 * per request ÷ the floor's, for the closed loop and each fixed rate, as a median and range over the
 * rounds; a goal is judged on the worst round.
 */
import { roundRatios, type Measure, type RoundsResult, type Spread } from '../peers/rounds.js';

/** A side's CPU per request ÷ the floor's in each round: the closed loop and each fixed rate. */
export interface FloorRatios {
  closed: Spread;
  atRate: Record<string, Spread>;
  /** the highest ratio of any round at any fixed rate: what the goal (≤ 1.2) is judged on */
  worstAtRates: number;
}

/** Each side's CPU per request ÷ the floor's, round by round, for every load of `rounds`. */
export function ratiosToFloor(rounds: RoundsResult, sides: readonly string[]): Record<string, FloorRatios> {
  return ratiosTo(rounds, sides, 'floor');
}

/** Each side's CPU per request ÷ the `base` side's, round by round (the service asked for `br` ÷ not). */
export function ratiosTo(
  rounds: RoundsResult,
  sides: readonly string[],
  base: string,
): Record<string, FloorRatios> {
  const cpu = (m: Measure): number => m.serverCpuMicrosPerRequest;
  return Object.fromEntries(
    sides
      .filter((side) => side !== base)
      .map((side) => {
        const atRate = Object.fromEntries(
          rounds.offeredRates.map((offered) => [
            String(offered),
            roundRatios(rounds, side, base, cpu, offered),
          ]),
        );
        return [
          side,
          {
            closed: roundRatios(rounds, side, base, cpu),
            atRate,
            worstAtRates: Math.max(...Object.values(atRate).map((s) => s.max)),
          },
        ];
      }),
  );
}

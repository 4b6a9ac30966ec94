/**
 * Rounds of loads over two or more sides of a comparison (the service and its peers; one thread and
 * N), on the same pre-generated request sequence:
 *
 * 1. a warm-up: a closed loop on each side, not counted, whose figures set the fixed rates;
 * 2. `rounds` rounds, the sides in turn, in the opposite order every other round (ABBA), so that a
 *    drift of the shared machine's speed weighs on every side alike; in a round each side gets a
 *    closed loop (its maximum) and then each fixed offered rate, each load after the side's
 *    checkpoint (`Side.checkpoint`).
 *
 * Each load records the side's CPU time (its process trees, from /proc) per request, wrk's own CPU
 * and the machine's load average while it ran. Ratios between two sides are taken within each round
 * and given as their median and range (`Spread`): a goal counts as met only when its worst round
 * meets it.
 */
import { availableParallelism } from 'node:os';
import { treeCpuMs, treeDiskReadBytes, type LoadSummary } from './proc.js';
import { wrk, type SequenceFile, type WrkResult } from './wrk.js';
import { note } from '../progress.js';

export interface Side {
  name: string;
  origin: string;
  /** roots of the process trees whose CPU counts as the side's */
  roots: () => number[];
  /** run before each measured load (a checkpoint of the side's storage); what it did */
  checkpoint: () => Promise<string>;
  /** started with each measured load; the function it returns gives what was observed, after it */
  observe?: () => () => Record<string, unknown>;
  /** what this side is sent instead of the plan's sequence: the same requests with other headers */
  sequence?: SequenceFile;
}

/** One load on one side: wrk's figures of it, with what the side's processes spent. */
export interface Measure extends Pick<
  WrkResult,
  | 'requests'
  | 'seconds'
  | 'rps'
  | 'p50Ms'
  | 'p99Ms'
  | 'meanMs'
  | 'errors'
  | 'lateSlots'
  | 'meanLateMs'
  | 'perThread'
> {
  /** offered requests per second; null for a closed loop */
  offeredRps: number | null;
  connections: number;
  serverCpuMicrosPerRequest: number;
  /** requests per second per core of server CPU: 1 000 000 / serverCpuMicrosPerRequest */
  rpsPerCore: number;
  /** cores the side's processes used while answering */
  serverCores: number;
  /** MB the side's processes read from the disk during the load: pages the page cache no longer held */
  serverDiskReadMb: number;
  /** cores wrk used, and that as a share of the machine's cores */
  wrkCores: number;
  wrkShareOfCores: number;
  /** the benchmark's own process (its samplers of /proc) from wrk's start to its end, over wrk's duration: cores */
  harnessCores: number;
  loadAverage: LoadSummary;
  checkpoint: string;
  observed?: Record<string, unknown>;
}

export interface Round {
  order: string[];
  closed: Record<string, Measure>;
  /** by offered rate */
  fixed: Record<string, Record<string, Measure>>;
}

export interface RoundsResult {
  warmUp: Record<string, Measure>;
  offeredRates: number[];
  rounds: Round[];
}

export interface RoundsPlan {
  sequence: SequenceFile;
  seconds: number;
  warmUpSeconds: number;
  connections: number;
  rounds: number;
  /** the fixed offered rates, from the warm-up's closed loops (none: closed loops only) */
  rates: (warmUp: Record<string, Measure>) => number[];
  /** connections of the fixed-rate loads: enough that the schedule, not the connections, sets the pace */
  rateConnections: number;
  /** wrk threads (default 1); as many as connections counts requests per connection */
  threads?: number;
  /** the load average sampled over the run */
  loadSince: (from: number) => LoadSummary;
}

const round1 = (n: number): number => Math.round(n * 10) / 10;
const round2 = (n: number): number => Math.round(n * 100) / 100;

export async function measure(
  side: Side,
  plan: RoundsPlan,
  seconds: number,
  rate: number | null,
): Promise<Measure> {
  const connections = rate === null ? plan.connections : plan.rateConnections;
  const checkpoint = await side.checkpoint();
  const finish = side.observe?.();
  const from = Date.now();
  const before = treeCpuMs(side.roots());
  const readBefore = treeDiskReadBytes(side.roots());
  const harnessBefore = process.cpuUsage();
  const r = await wrk(side.origin, side.sequence ?? plan.sequence, seconds, connections, {
    ...(rate === null ? {} : { rate }),
    threads: plan.threads ?? 1,
  });
  const harness = process.cpuUsage(harnessBefore);
  const cpuMs = treeCpuMs(side.roots()) - before;
  const diskReadBytes = treeDiskReadBytes(side.roots()) - readBefore;
  const observed = finish?.();
  const micros = (cpuMs * 1000) / Math.max(1, r.requests);
  const m: Measure = {
    offeredRps: rate,
    connections,
    requests: r.requests,
    seconds: round2(r.seconds),
    rps: r.rps,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    meanMs: round2(r.meanMs),
    errors: r.errors,
    serverCpuMicrosPerRequest: round1(micros),
    rpsPerCore: Math.round(1e6 / Math.max(micros, 1e-9)),
    serverCores: round2(cpuMs / 1000 / r.seconds),
    serverDiskReadMb: round1(diskReadBytes / 1024 / 1024),
    wrkCores: round2(r.wrkCpuMs / 1000 / r.seconds),
    wrkShareOfCores: round2(r.wrkCpuMs / 1000 / r.seconds / availableParallelism()),
    harnessCores: round2((harness.user + harness.system) / 1e6 / r.seconds),
    lateSlots: r.lateSlots,
    meanLateMs: r.meanLateMs,
    perThread: r.perThread,
    loadAverage: plan.loadSince(from),
    checkpoint,
    ...(observed === undefined ? {} : { observed }),
  };
  note(
    `${side.name} ${rate === null ? `closed loop, ${connections} connections` : `${rate} req/s offered`}: ${m.rps} req/s, p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms, ${m.serverCpuMicrosPerRequest} µs server CPU/request, server ${m.serverCores} cores, ${m.serverDiskReadMb} MB read from disk, wrk ${m.wrkCores}, benchmark ${m.harnessCores}, ${m.lateSlots} late slots, load average ${m.loadAverage.mean}`,
  );
  if (r.errors > 0) throw new Error(`${side.name}: ${r.errors} requests failed or were refused`);
  return m;
}

export async function runRounds(sides: readonly Side[], plan: RoundsPlan): Promise<RoundsResult> {
  const warmUp: Record<string, Measure> = {};
  for (const side of sides) warmUp[side.name] = await measure(side, plan, plan.warmUpSeconds, null);
  const offeredRates = plan.rates(warmUp);
  const rounds: Round[] = [];
  for (let r = 0; r < plan.rounds; r += 1) {
    const order = r % 2 === 0 ? [...sides] : [...sides].reverse();
    const round: Round = { order: order.map((s) => s.name), closed: {}, fixed: {} };
    for (const side of order) {
      round.closed[side.name] = await measure(side, plan, plan.seconds, null);
      for (const rate of offeredRates)
        (round.fixed[String(rate)] ??= {})[side.name] = await measure(side, plan, plan.seconds, rate);
    }
    rounds.push(round);
  }
  return { warmUp, offeredRates, rounds };
}

export interface Spread {
  /** the value of each round, in order */
  rounds: number[];
  median: number;
  min: number;
  max: number;
}

export function spread(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const r3 = (n: number): number => Math.round(n * 1000) / 1000;
  return {
    rounds: values.map(r3),
    median: r3(median),
    min: r3(sorted[0] ?? 0),
    max: r3(sorted.at(-1) ?? 0),
  };
}

/** a ÷ b of a figure of every round's closed loop, or of its load at `rate`. */
export function roundRatios(
  result: RoundsResult,
  a: string,
  b: string,
  figure: (m: Measure) => number,
  rate?: number,
): Spread {
  return spread(
    result.rounds.map((round) => {
      const loads = rate === undefined ? round.closed : round.fixed[String(rate)]!;
      return figure(loads[a]!) / figure(loads[b]!);
    }),
  );
}

/** A side's figure over the rounds (closed loop, or the load at `rate`). */
export function sideSpread(
  result: RoundsResult,
  side: string,
  figure: (m: Measure) => number,
  rate?: number,
): Spread {
  return spread(
    result.rounds.map((round) =>
      figure((rate === undefined ? round.closed : round.fixed[String(rate)]!)[side]!),
    ),
  );
}

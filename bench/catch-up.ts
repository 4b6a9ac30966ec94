/**
 * Live catch-up against a rebuild, on one data set in one run: a fresh replica catching up the
 * whole log (a) batch by batch (`CATCH_UP_REPLAY_MIN_LAG=off`, the service before the catch-up
 * replay), (b) as the service does by default (a replay into a new model, then served), and (c)
 * the `rebuild` command. Rounds run a b c, then c b a, and so on, so that a drift of the machine
 * weighs on each side alike. Each figure is process start to the last message applied (for the
 * service: served, in `CURRENT`), and the ratios b/c and b/a are taken per round: median and range.
 *   npm run bench:catch-up -- [--orders N] [--rounds N] [--memory-timeline 1]
 * Each process's peak RSS is its VmHWM, sampled every 200 ms (the command's too, before it ends);
 * `--memory-timeline 1` also keeps the samples (RSS, anonymous and file-backed, threads).
 * `--replay-min-lag N` sets (b)'s CATCH_UP_REPLAY_MIN_LAG (0, the default: the service's own, under
 * which a log of fewer messages is caught up batch by batch, as (a)).
 * Writes bench/results/catch-up-<UTC date-time>.json.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runServiceCommand } from '../tools/harness.js';
import { appliedMessages, topicEndOffsets } from '../tools/model-progress.js';
import { loopbackServiceEnv } from '../tools/service-env.js';
import { numericOptions, reportRun } from './cli.js';
import {
  benchDataOf,
  dataSetFor,
  endOffsetsVia,
  kafkaOf,
  rate,
  startServiceProcess,
  useBuiltService,
  waitUntil,
} from './lib.js';
import { counterProbe, note, phase } from './progress.js';
import { cpuMsOf, type Figure } from './run.js';
import { loadSampler, memoryTimeline, type LoadSummary, type MemorySample } from './peers/proc.js';
import { spread } from './peers/rounds.js';

const options = numericOptions(
  { orders: 100_000, rounds: 2, 'memory-timeline': 0, 'replay-min-lag': 0 },
  'usage: npm run bench:catch-up -- [--orders N] [--rounds N] [--memory-timeline 1] [--replay-min-lag N]',
);

type Way = 'batchByBatch' | 'catchUp' | 'rebuild';

interface Measure {
  way: Way;
  round: number;
  /** process start to the last message applied */
  ms: number;
  eventsPerSecond: number;
  /** CPU seconds of the service process (its threads included); null for the command */
  cpuSeconds: number | null;
  /** VmHWM, as last sampled */
  peakRssMb: number | null;
  /** the machine's 1-minute load average while it ran */
  loadAverage: LoadSummary;
  /** the process's memory every 200 ms from its start (`--memory-timeline 1`), else absent */
  memory?: MemorySample[];
}

async function main(): Promise<void> {
  const started = new Date();
  useBuiltService();
  const data = benchDataOf(options.orders);
  const dataSet = await dataSetFor(undefined, 'catch-up', data);
  const dir = mkdtempSync(join(tmpdir(), 'bench-catch-up-'));
  const measures: Measure[] = [];
  const load = loadSampler();
  try {
    const total = await topicEndOffsets(
      endOffsetsVia(kafkaOf(dataSet.brokers)),
      Object.values(dataSet.topics),
    );
    note(`${total} messages in the topics`);
    const service = async (way: Way, round: number, env: Record<string, string>): Promise<Measure> => {
      const dataDir = join(dir, `${way}-${round}`);
      const startedAt = Date.now();
      let pid = 0;
      const memory = memoryTimeline(() => pid);
      const process_ = await startServiceProcess(dataSet.brokers, dataSet.topics, dataDir, env);
      pid = process_.child.pid ?? 0;
      await phase(
        `round ${round}: ${way}`,
        () =>
          waitUntil(
            'every message applied and served',
            () => appliedMessages(dataDir) >= total,
            60 * 60_000,
            50,
          ),
        counterProbe('events', () => appliedMessages(dataDir), total),
      );
      const ms = Date.now() - startedAt;
      const cpu = cpuMsOf(pid);
      const timeline = memory.stop();
      const peakRssMb = Math.max(process_.peakRssMb(), timeline.peakRssMb);
      await process_.stop();
      rmSync(dataDir, { recursive: true, force: true });
      return {
        way,
        round,
        ms,
        eventsPerSecond: rate(total, ms),
        cpuSeconds: cpu === null ? null : cpu / 1000,
        peakRssMb,
        loadAverage: load.summary(startedAt),
        ...(options['memory-timeline'] === 1 ? { memory: timeline.samples } : {}),
      };
    };
    const rebuild = async (round: number): Promise<Measure> => {
      const startedAt = Date.now();
      let pid = 0;
      const memory = memoryTimeline(() => pid);
      await phase(`round ${round}: rebuild`, () =>
        runServiceCommand(
          ['rebuild', '--no-promote'],
          loopbackServiceEnv({
            brokers: dataSet.brokers,
            groupId: `bench-catch-up-rebuild-${Date.now()}`,
            topics: dataSet.topics,
            dataDir: join(dir, `rebuild-${round}`),
            logLevel: 'warn',
          }),
          undefined,
          (started) => (pid = started),
        ),
      );
      const ms = Date.now() - startedAt;
      pid = 0; // it has ended: its pid may be given to another process
      const timeline = memory.stop();
      rmSync(join(dir, `rebuild-${round}`), { recursive: true, force: true });
      return {
        way: 'rebuild',
        round,
        ms,
        eventsPerSecond: rate(total, ms),
        cpuSeconds: null,
        peakRssMb: timeline.peakRssMb,
        loadAverage: load.summary(startedAt),
        ...(options['memory-timeline'] === 1 ? { memory: timeline.samples } : {}),
      };
    };
    const run: Record<Way, (round: number) => Promise<Measure>> = {
      batchByBatch: (round) => service('batchByBatch', round, { CATCH_UP_REPLAY_MIN_LAG: 'off' }),
      catchUp: (round) =>
        service(
          'catchUp',
          round,
          options['replay-min-lag'] === 0
            ? {}
            : { CATCH_UP_REPLAY_MIN_LAG: String(options['replay-min-lag']) },
        ),
      rebuild,
    };
    for (let round = 1; round <= options.rounds; round += 1) {
      const order: Way[] =
        round % 2 === 1 ? ['batchByBatch', 'catchUp', 'rebuild'] : ['rebuild', 'catchUp', 'batchByBatch'];
      for (const way of order) measures.push(await run[way](round));
    }
    const of = (way: Way, round: number): Measure =>
      measures.find((m) => m.way === way && m.round === round)!;
    const rounds = Array.from({ length: options.rounds }, (_, i) => i + 1);
    const againstRebuild = rounds.map(
      (r) => of('catchUp', r).eventsPerSecond / of('rebuild', r).eventsPerSecond,
    );
    const againstBefore = rounds.map(
      (r) => of('catchUp', r).eventsPerSecond / of('batchByBatch', r).eventsPerSecond,
    );
    const list = (way: Way): string => rounds.map((r) => of(way, r).eventsPerSecond).join(', ') + ' events/s';
    const described = (ratios: number[]): string => {
      const { median, min, max, rounds: each } = spread(ratios);
      return `median ${median}, range ${min} – ${max} (${each.join(', ')})`;
    };
    const figures: Figure[] = [
      {
        name: 'data set',
        value: `${total} messages, ${data.orders} orders; load average over the run ${load.summary().mean} (${load.summary().min}–${load.summary().max})`,
      },
      { name: '(a) batch by batch (before), per round', value: list('batchByBatch') },
      { name: '(b) catch-up as the service does it, per round', value: list('catchUp') },
      { name: '(c) rebuild command, per round', value: list('rebuild') },
      {
        name: 'b / c: catch-up against the rebuild',
        value: described(againstRebuild),
        ratio: spread(againstRebuild).min,
        target: '≥ 0.8 in the worst round',
      },
      {
        name: 'b / a: catch-up against batch by batch',
        value: described(againstBefore),
        ratio: spread(againstBefore).min,
      },
      {
        name: 'service CPU seconds, a and b, per round',
        value: rounds
          .map((r) => `${of('batchByBatch', r).cpuSeconds} / ${of('catchUp', r).cpuSeconds}`)
          .join('; '),
      },
      {
        name: 'peak RSS, a, b and c, per round',
        value: rounds
          .map(
            (r) =>
              `${of('batchByBatch', r).peakRssMb} / ${of('catchUp', r).peakRssMb} / ${of('rebuild', r).peakRssMb} MB`,
          )
          .join('; '),
        target: '≤ 300 MB',
      },
    ];
    reportRun('catch-up', started, options, figures, {
      messages: total,
      measures,
      againstRebuild,
      againstBefore,
    });
  } finally {
    load.stop();
    rmSync(dir, { recursive: true, force: true });
    await dataSet.close();
  }
}

await main();

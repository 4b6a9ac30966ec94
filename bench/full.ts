/**
 * The full run (`npm run bench`): ingest, rebuild and API (bench/run.ts), the PostgreSQL peer
 * (bench/peer.ts) and the request threads (bench/workers.ts), all on one published data set, with
 * every figure in one results file, `bench/results/<UTC date-time>.json`: `ingest.*`, `rebuild.*`,
 * `api.*`, `peer.*` (the service's and the peer's sides, their ratios and the goals) and
 * `workers.*` (HTTP_WORKERS=1 and N). A peer or workers phase that fails is recorded as `peerError` or
 * `workersError` and the run goes on.
 *
 * Besides bench/run.ts's BENCH_* variables: BENCH_PEER (default 1; 0 leaves the peers out),
 * BENCH_HTTP_WORKERS (the N of the workers phase, default 2; 1 leaves it out), BENCH_ROUNDS (rounds
 * of each load of those two phases, default 5), BENCH_CONNECTIONS (closed loops, default 10),
 * BENCH_RATE (a fixed offered rate of the peer phase besides 80 % of the slower side's maximum,
 * default 1000); their loads last BENCH_API_SECONDS after a warm-up of BENCH_API_WARMUP_SECONDS, as
 * the API phase's. Both need `wrk` on the PATH. The peers' plans go beside the results file
 * (`<date-time>-explain.txt`); the machine's load average, sampled every second, goes into it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isEntryPoint } from '../tools/harness.js';
import { root, useBuiltService, type DataSetOnBroker } from './lib.js';
import { runPeerBench, writeExplain } from './peer.js';
import { buildPeer } from './peers/postgres/process.js';
import { loadSampler } from './peers/proc.js';
import { requireWrk } from './peers/wrk.js';
import { benchEnvironment, printFigures, runBench, runRecord, type Figure } from './run.js';
import { runWorkersBench } from './workers.js';

function wholeNumber(name: string, fallback: number, least: number): number {
  const n = Number(process.env[name] ?? fallback);
  if (!Number.isSafeInteger(n) || n < least) {
    console.error(`${name} must be an integer ≥ ${least}`);
    process.exit(2);
  }
  return n;
}

if (isEntryPoint(import.meta.url)) {
  const { data, apiSeconds, newEvents } = benchEnvironment();
  const withPeer = wholeNumber('BENCH_PEER', 1, 0) !== 0;
  const workers = wholeNumber('BENCH_HTTP_WORKERS', 2, 1);
  const loads = {
    seconds: apiSeconds.measure,
    warmUp: apiSeconds.warmUp,
    connections: wholeNumber('BENCH_CONNECTIONS', 10, 1),
    rounds: wholeNumber('BENCH_ROUNDS', 5, 1),
  };
  const rate = wholeNumber('BENCH_RATE', 1000, 1);
  if (withPeer || workers > 1) requireWrk();
  useBuiltService();
  if (withPeer) buildPeer();
  const started = new Date();
  const load = loadSampler();
  const extra: Record<string, unknown> = {};
  let plans = '';
  /** A phase that fails is recorded (`<name>Error`) and the run goes on: hours of figures are not lost to it. */
  const side = async (
    name: 'peer' | 'workers',
    run: () => Promise<{ figures: Figure[]; results: unknown; explainText?: string }>,
  ): Promise<Figure[]> => {
    try {
      const { figures, results, explainText } = await run();
      extra[name] = results;
      plans += explainText ?? '';
      return figures.map((figure) => ({ ...figure, name: `${name}: ${figure.name}` }));
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      console.error(`the ${name} phase failed; the run goes on without it:\n${message}`);
      extra[`${name}Error`] = message;
      return [{ name: `${name}: failed`, value: message.split('\n')[0] ?? message }];
    }
  };
  const peerAndWorkers = async (dataSet: DataSetOnBroker): Promise<Figure[]> => [
    ...(withPeer
      ? await side('peer', () =>
          runPeerBench({
            data,
            ...loads,
            rates: [rate],
            rateConnections: 50,
            runtime: 'dist',
            partitionsConcurrently: 3,
            designs: ['competent', 'naive'],
            dataSet,
          }),
        )
      : []),
    ...(workers > 1
      ? await side('workers', () =>
          runWorkersBench({ data, workers, ...loads, moreConnections: loads.connections * 4, dataSet }),
        )
      : []),
  ];
  runBench('all', data, apiSeconds, newEvents, peerAndWorkers)
    .then(({ figures, results }) => {
      console.log(`\nfull benchmark, ${started.toISOString()}, Node ${process.version}\n`);
      console.log(printFigures(figures));
      const file = join(root, 'bench', 'results', `${started.toISOString().replace(/[:.]/g, '-')}.json`);
      mkdirSync(join(root, 'bench', 'results'), { recursive: true });
      const record = {
        ...runRecord(started, data, results),
        loadAverage: load.summary(),
        ...extra,
        figures,
      };
      load.stop();
      writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
      if (plans !== '') writeExplain(file, plans);
      console.log(`\nresults: ${file}`);
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}

/**
 * CPU of an idle replica: one built service, ready on a small data set, answering no request and
 * getting no event, measured from `/proc/<pid>/stat` (user + system time of every thread of the
 * process) over rounds of `--seconds`. Logs at the default level.
 *
 *   npm run bench:idle-cpu -- [--label TEXT] [--rounds 3] [--seconds 20] [--profile DIR]
 *
 * `--profile DIR` writes a V8 CPU profile of each of the service's threads into DIR (`--cpu-prof`).
 * Writes `bench/results/idle-cpu-<label>-<time>.json`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  benchBroker,
  benchDataOf,
  createBenchTopics,
  kafkaOf,
  publishBenchData,
  root,
  startServiceProcess,
  useBuiltService,
  waitUntil,
} from './lib.js';

const { values } = parseArgs({
  options: {
    label: { type: 'string', default: 'run' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '20' },
    profile: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);
if (!(rounds >= 1 && seconds >= 1)) throw new Error('--rounds and --seconds must be at least 1');

/** The process's CPU time so far in milliseconds: utime + stime of /proc/<pid>/stat, every thread. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the fields after the command name, which is in parentheses and may hold spaces
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

useBuiltService();
const broker = await benchBroker();
const kafka = kafkaOf(broker.brokers);
const topics = await createBenchTopics(kafka, `idle-${Date.now()}`);
const data = benchDataOf(1000);
const published = await publishBenchData(kafka, topics, data);
const dataDir = mkdtempSync(join(tmpdir(), 'idle-cpu-'));
const service = await startServiceProcess(broker.brokers, topics, dataDir, {
  LOG_LEVEL: 'info',
  ...(values.profile === undefined ? {} : { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${values.profile}` }),
});
const pid = service.child.pid ?? 0;
try {
  await waitUntil(
    'the replica is ready',
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${service.adminPort}/readyz`)).ok;
      } catch {
        return false;
      }
    },
    120_000,
  );
  // the start's own work (joins, the first lag checks) settles first
  await new Promise((r) => setTimeout(r, 10_000));
  const perRound: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    const before = cpuMs(pid);
    const started = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const msPerSecond = (cpuMs(pid) - before) / ((performance.now() - started) / 1000);
    perRound.push(Math.round(msPerSecond * 10) / 10);
    console.log(`round ${round + 1}: ${perRound[round]} ms of CPU per second`);
  }
  const sorted = [...perRound].sort((a, b) => a - b);
  const result = {
    label: values.label,
    at: new Date().toISOString(),
    node: process.version,
    messages: published.messages,
    seconds,
    cpuMsPerSecond: perRound,
    median: sorted[Math.floor(sorted.length / 2)],
    worst: sorted[sorted.length - 1],
    loadAverage: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number),
  };
  const file = join(
    root,
    'bench',
    'results',
    `idle-cpu-${values.label}-${result.at.replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`median ${result.median}, worst ${result.worst} ms/s; ${file}`);
} finally {
  await service.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await broker.close();
}

/**
 * What the on-demand benchmarks' command lines share: numeric options read strictly, and the
 * results file (`bench/results/<name>-<UTC date-time>.json`) with the run's command, options and
 * machine.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { root } from './lib.js';
import { printFigures, type Figure } from './run.js';

/**
 * The numeric options of the command line (`--name N`), with their defaults; a value that is not a
 * whole number at least `min` (1 unless given) stops the process with exit code 2 and the usage.
 */
export function numericOptions<const K extends string>(
  defaults: Record<K, number>,
  usage: string,
  min: Partial<Record<K, number>> = {},
): Record<K, number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      options: Object.fromEntries(
        Object.entries(defaults).map(([name, value]) => [name, { type: 'string', default: String(value) }]),
      ),
      strict: true,
    }));
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
    process.exit(2);
  }
  const numbers = {} as Record<K, number>;
  for (const name of Object.keys(defaults) as K[]) {
    const n = Number(values[name]);
    const least = min[name] ?? 1;
    if (!Number.isSafeInteger(n) || n < least) {
      console.error(`--${name} must be an integer ≥ ${least}\n${usage}`);
      process.exit(2);
    }
    numbers[name] = n;
  }
  return numbers;
}

/** Prints a run's figures and writes them, with what the run was, to its results file; the file's path. */
export function reportRun(
  name: string,
  started: Date,
  options: unknown,
  figures: Figure[],
  results: Record<string, unknown>,
): string {
  console.log(`\n${name} benchmark, ${started.toISOString()}, Node ${process.version}\n`);
  console.log(printFigures(figures));
  const dir = join(root, 'bench', 'results');
  const file = join(dir, `${name}-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(dir, { recursive: true });
  const cpu = cpus();
  const body = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    command: `npm run bench:${name} -- ${process.argv.slice(2).join(' ')}`.trim(),
    options,
    machine: {
      cpus: cpu.length,
      cpuModel: cpu[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      platform: `${process.platform} ${process.arch}`,
    },
    node: process.version,
    ...results,
    figures,
  };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
  return file;
}

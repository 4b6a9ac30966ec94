/**
 * What tests, benchmarks and the demo share to drive the service from outside: its processes, the
 * topics of the contract, and waiting for a condition. One implementation of each.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Admin } from 'kafkajs';
import { perStream, streams, type TopicRole } from '../schemas/streams.js';
import { createTopicsWithLeaders } from '../src/kafka/kafkajs-topics.js';
import { creationEntries } from '../src/kafka/retention.js';

export const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** True when the module at `moduleUrl` (its `import.meta.url`) is the script node was started with. */
export function isEntryPoint(moduleUrl: string): boolean {
  return process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(moduleUrl);
}

/**
 * How the service's executable runs: `source` is `src/main.ts` through tsx (tests, development);
 * `dist` is what `npm start` runs, the JavaScript `npm run build` left in dist/ with no transpiler
 * loaded (benchmarks, so that their figures, memory included, are the shipped service's).
 */
export type ServiceRuntime = 'source' | 'dist';

let serviceRuntime: ServiceRuntime = 'source';

/**
 * The Node flags the built service runs with (`npm start`, the Dockerfile's ENTRYPOINT; a test holds
 * the three equal): 4 MB semi-spaces keep the young generation of the thread answering requests
 * small, whose garbage is short-lived (about 20 MB less peak memory under load while ingesting). The
 * preloaded check stops an unsupported Node with one line before any module of the service loads.
 */
export const builtServiceNodeFlags = [
  '--require',
  './scripts/check-node.cjs',
  '--max-semi-space-size=4',
] as const;

/** Makes every later service command of this process run as `runtime`. */
export function useServiceRuntime(runtime: ServiceRuntime): void {
  serviceRuntime = runtime;
}

/**
 * The arguments of `node` that run a command of the service's executable as the chosen runtime;
 * `root`: the checkout it runs from (another one: bench:profile's `--before`).
 */
export function serviceArgv(args: readonly string[], root: string = projectRoot): string[] {
  const entry =
    serviceRuntime === 'dist'
      ? [...builtServiceNodeFlags, join(root, 'dist', 'src', 'main.js')]
      : ['--import', 'tsx', join(root, 'src', 'main.ts')];
  return [...entry, ...args];
}

/**
 * Runs a command of the service's executable with `env`, as the chosen runtime. `detached`: in a
 * process group of its own, so that a Ctrl-C in the terminal reaches the caller alone. `root`: the
 * checkout to run it from, this one by default.
 */
export function spawnServiceCommand(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stdio: StdioOptions = ['ignore', 'pipe', 'pipe'],
  options: { detached?: boolean; root?: string } = {},
): ChildProcess {
  const root = resolve(options.root ?? projectRoot);
  return spawn(process.execPath, serviceArgv(args, root), {
    cwd: root,
    env,
    stdio,
    detached: options.detached === true,
  });
}

/**
 * Runs a command to its end; resolves with its stdout, rejects with it on a non-zero exit. Its stderr
 * (logs, progress) reaches the terminal of an operator running a benchmark; under a test runner it
 * is kept and shown only in the error of a failed command, so that a passing suite prints no logs.
 */
export function runServiceCommand(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onOutput: (chunk: Buffer) => void = () => undefined,
  onStart: (pid: number) => void = () => undefined,
): Promise<string> {
  const underTests = process.env['VITEST'] !== undefined;
  return new Promise((resolveRun, reject) => {
    const child = spawnServiceCommand(args, env, ['ignore', 'pipe', underTests ? 'pipe' : 'inherit']);
    onStart(child.pid ?? 0);
    let out = '';
    let err = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      onOutput(chunk);
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      // the last 64 KiB is enough to say why a command failed
      err = (err + chunk.toString()).slice(-65_536);
    });
    child.on('exit', (code) =>
      code === 0
        ? resolveRun(out)
        : reject(
            new Error(`${args.join(' ')} exited ${code}: ${out}${err === '' ? '' : `\nstderr:\n${err}`}`),
          ),
    );
  });
}

/** The topics of the contract (every declared stream's default name) under one name prefix. */
export function contractTopicNames(prefix: string): Record<TopicRole, string> {
  return perStream((role) => `${prefix}.${streams[role].defaultTopic}`);
}

/** Creates the topics of the contract under `prefix` and returns their names. */
export async function createContractTopicSet(
  admin: Admin,
  prefix: string,
  numPartitions = 3,
): Promise<Record<TopicRole, string>> {
  const topics = contractTopicNames(prefix);
  await createTopicsWithLeaders(
    admin,
    Object.values(topics).map((topic) => ({
      topic,
      numPartitions,
      replicationFactor: 1,
      // as `topics create` makes them: keeping every event
      configEntries: creationEntries({ partitions: numPartitions }),
    })),
  );
  return topics;
}

/** Polls until `check` returns true, failing with `what` after the timeout. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 60_000,
  intervalMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((wake) => setTimeout(wake, intervalMs));
  }
}

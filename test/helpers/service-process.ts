/** The whole service (`src/main.ts`, what `npm start` runs) as a child process. */
import type { ChildProcess } from 'node:child_process';
import { afterAll, expect, inject } from 'vitest';
import type { TopicRole } from '../../schemas/streams.js';
import { spawnServiceCommand } from '../../tools/harness.js';
import { loopbackServiceEnv } from '../../tools/service-env.js';
import { processWarningLines } from './no-process-warnings.js';

export interface ServiceProcess {
  child: ChildProcess;
  /** every line the process wrote to stdout and stderr */
  output: string[];
  exited: Promise<number | null>;
}

export function serviceEnv(options: {
  topics: Record<TopicRole, string>;
  dataDir: string;
  httpPort: number;
  adminPort?: number;
  groupId: string;
}): NodeJS.ProcessEnv {
  // A short session lets a restarted service rejoin its group soon after a SIGKILL.
  return {
    ...loopbackServiceEnv({ ...options, brokers: inject('kafkaBrokers') }),
    KAFKA_SESSION_TIMEOUT_MS: '6000',
  };
}

const running = new Set<ChildProcess>();
const outputs: string[][] = [];
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
  expect(outputs.flatMap(processWarningLines), 'process warnings of the service processes').toEqual([]);
});

export function spawnService(env: NodeJS.ProcessEnv): ServiceProcess {
  const child = spawnServiceCommand(['serve'], env);
  running.add(child);
  const output: string[] = [];
  outputs.push(output);
  const collect = (chunk: Buffer): void => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolveExit) => {
    child.on('exit', (code) => {
      running.delete(child);
      resolveExit(code);
    });
  });
  return { child, output, exited };
}

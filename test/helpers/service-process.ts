/** The whole service (`src/main.ts`, what `npm start` runs) as a child process. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, inject } from 'vitest';
import type { TopicRole } from '../../schemas/events.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

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
  return {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_GROUP_ID: options.groupId,
    KAFKA_SESSION_TIMEOUT_MS: '6000',
    TOPIC_ORDERS: options.topics.orders,
    TOPIC_ORDER_STATUS: options.topics.orderStatus,
    TOPIC_ARTICLES: options.topics.articles,
    TOPIC_API_KEYS: options.topics.apiKeys,
    DATA_DIR: options.dataDir,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: String(options.httpPort),
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(options.adminPort ?? 0),
    LOG_LEVEL: 'info',
  };
}

const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill('SIGKILL');
});

export function spawnService(env: NodeJS.ProcessEnv): ServiceProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src', 'main.ts'), 'serve'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<number | null>((resolveExit) => {
    child.on('exit', (code) => {
      running.delete(child);
      resolveExit(code);
    });
  });
  return { child, output, exited };
}

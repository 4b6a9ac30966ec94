/** Debian's haproxy running the deployment's configuration (deploy/haproxy/haproxy.cfg), killed after the file. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { projectRoot } from '../../tools/harness.js';

/** Debian's package installs it in /usr/sbin, which is not on every user's PATH. */
const haproxyBinary =
  process.env['HAPROXY'] ?? (existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : 'haproxy');

export function startHaproxy(env: NodeJS.ProcessEnv): { child: ChildProcess; output: string[] } {
  const child = spawn(haproxyBinary, ['-db', '-f', join(projectRoot, 'deploy', 'haproxy', 'haproxy.cfg')], {
    env: { PATH: process.env['PATH'], ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const collect = (chunk: Buffer): void => {
    output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  child.on('error', (error) => output.push(`cannot run ${haproxyBinary}: ${error.message}`));
  afterAll(() => {
    child.kill('SIGKILL');
  });
  return { child, output };
}

/**
 * The balancer on a free loopback port in front of two replicas (`httpPort`, `adminPort` each), with
 * `X-Replica` naming the replica that answered (BALANCER_REPLICA_HEADER, which the deployment does
 * not tell callers), listening on `port`.
 */
export function startBalancerOf(
  port: number,
  replicas: readonly [{ httpPort: number; adminPort: number }, { httpPort: number; adminPort: number }],
): { child: ChildProcess; output: string[] } {
  const [one, two] = replicas;
  return startHaproxy({
    BALANCER_BIND: `127.0.0.1:${port}`,
    REPLICA_1: `127.0.0.1:${one.httpPort}`,
    REPLICA_1_ADMIN: String(one.adminPort),
    REPLICA_2: `127.0.0.1:${two.httpPort}`,
    REPLICA_2_ADMIN: String(two.adminPort),
    BALANCER_REPLICA_HEADER: '1',
  });
}

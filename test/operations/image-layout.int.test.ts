/**
 * The image's runtime stage, without Docker (CI has no engine): a directory laid out as the
 * Dockerfile's last stage copies it (dist/, the production dependencies only, package.json and
 * scripts/check-node.cjs), the Dockerfile's ENV, ENTRYPOINT and CMD as written, and its HEALTHCHECK
 * command run until it passes. The service must then serve, and stop cleanly on SIGTERM.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { projectRoot } from '../../tools/harness.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

const dockerfile = readFileSync(join(projectRoot, 'Dockerfile'), 'utf8');
/** The runtime stage: what follows the last FROM. */
const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

/** `ENV A=1 \ B=2`: the variables the image sets. */
function imageEnv(): Record<string, string> {
  const block = /\nENV ((?:.*\\\n)*.*)/.exec(runtime)?.[1] ?? '';
  return Object.fromEntries(
    block
      .replaceAll('\\\n', ' ')
      .trim()
      .split(/\s+/)
      .map((pair) => pair.split('=') as [string, string]),
  );
}

const jsonInstruction = (name: string): string[] =>
  JSON.parse(new RegExp(`\\n${name} (\\[.*\\])`).exec(runtime)?.[1] ?? '[]') as string[];

/** The production dependencies as installed: top-level folders of `npm ls --omit=dev` (nested ones come with them). */
function productionPackages(): string[] {
  const listed = execFileSync('npm', ['ls', '--omit=dev', '--parseable', '--all'], {
    cwd: projectRoot,
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  return listed
    .split('\n')
    .map((path) => relative(projectRoot, path))
    .filter((path) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path));
}

let service: ChildProcess | null = null;
afterAll(() => {
  service?.kill('SIGKILL');
});

describe('the Dockerfile’s runtime stage, laid out without Docker', () => {
  const dir = tempDir('image-layout');

  it('starts from ENTRYPOINT and CMD, passes its HEALTHCHECK, serves, and stops on SIGTERM', async () => {
    const app = join(dir, 'app');
    // hard links: the same files, in a tree that holds only what the image holds (no folder above
    // it in the temporary directory has a node_modules to fall back on)
    for (const path of [...productionPackages(), 'dist', 'package.json', 'scripts/check-node.cjs']) {
      mkdirSync(join(app, path, '..'), { recursive: true });
      execFileSync('cp', ['-al', join(projectRoot, path), join(app, path)]);
    }

    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [issueKeyOf(1), orderCreated({ order_id: 7 }, { occurred_at: at(1) })]);

    const [httpPort, adminPort] = [await freePort(), await freePort()];
    const image = imageEnv();
    expect(Object.keys(image)).toEqual(['NODE_ENV', 'DATA_DIR', 'HTTP_PORT', 'ADMIN_PORT']);
    const env = {
      ...serviceEnv({
        topics,
        dataDir: join(dir, 'data'),
        httpPort,
        adminPort,
        groupId: `layout-${httpPort}`,
      }),
      ...image,
      // the image's /data and ports, moved: this machine is shared
      DATA_DIR: join(dir, 'data'),
      HTTP_PORT: String(httpPort),
      ADMIN_PORT: String(adminPort),
    };
    const [command, ...entrypoint] = jsonInstruction('ENTRYPOINT');
    const cmd = jsonInstruction('CMD');
    expect([command, cmd]).toEqual(['node', ['serve']]);
    const output: string[] = [];
    service = spawn(process.execPath, [...entrypoint, ...cmd], {
      cwd: app,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    service.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    service.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => service?.on('exit', resolve));

    const healthcheck = /\n\s+CMD (.*)/.exec(runtime.slice(runtime.indexOf('HEALTHCHECK')))?.[1] ?? '';
    expect(healthcheck).toContain('process.env.ADMIN_PORT');
    const healthy = (): Promise<boolean> => {
      if (service?.exitCode !== null) throw new Error(`the service exited:\n${output.join('')}`);
      return promisify(execFile)('sh', ['-c', healthcheck], {
        cwd: app,
        env: { ...env, PATH: `${join(process.execPath, '..')}:${process.env['PATH'] ?? ''}` },
        timeout: 3000,
      }).then(
        () => true,
        () => false,
      );
    };
    await waitUntil(`the HEALTHCHECK passes; the service wrote:\n${output.join('')}`, healthy, 60_000, 250);
    await waitUntil('the order is served', async () => {
      const answer = await fetch(`http://127.0.0.1:${httpPort}${API_PREFIX}/orders`, {
        headers: { authorization: `Bearer ${keyOf(1)}` },
      });
      const body = (await answer.json()) as { total?: number };
      return answer.status === 200 && body.total === 1;
    });

    service.kill('SIGTERM');
    expect(await exited, output.join('')).toBe(0);
  });
});

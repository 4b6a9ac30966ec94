/**
 * The shell examples of docs/api.md, run as written with bash, curl, jq and kcat; only the origin
 * (and the topic's name, for kcat) is replaced:
 * - "Waiting for a change": one request per change, each change answered at once with the new
 *   page, the saved tag and body following it;
 * - "Cursors": the walk by `next` links prints every finished order once, newest first;
 * - "A position a publisher builds": the order kcat publishes is in the answer to the position
 *   built from the partition and offset kcat reported.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../tools/harness.js';
import { issueKeyOf, keyOf, startTestApi } from '../helpers/api.js';
import { at, orderCreated, statusChanged } from '../helpers/events.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

/** The first `sh` block of a section (`## ` or `### ` heading) of docs/api.md. */
function exampleOf(section: string): string {
  const text = readFileSync(join(projectRoot, 'docs', 'api.md'), 'utf8');
  const heading = new RegExp(`\n#{2,3} ${section.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`).exec(text);
  const start = heading?.index ?? -1;
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(start));
  if (start < 0 || block?.[1] === undefined) throw new Error(`docs/api.md: no sh example under "${section}"`);
  return block[1];
}

/**
 * Runs a script with bash (asynchronously: the API answering it is in this process) and collects
 * what it printed; killed after 30 s.
 */
function runScript(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn('bash', ['--norc', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({
        status,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('docs/api.md examples', () => {
  const dir = tempDir('api-examples');

  it('"Waiting for a change": the loop makes one request per change and keeps the newest page', async () => {
    const api = await startTestApi(
      [issueKeyOf(1), orderCreated({ order_id: 1, organization_id: 1 }, { occurred_at: at(1) })],
      { listen: true, followCommits: true },
    );
    const origin = new URL(api.baseUrl).origin;
    const script = exampleOf('Waiting for a change').replaceAll('http://localhost:8080', origin);
    const loop = spawn('bash', ['--norc', '-c', script], {
      cwd: dir,
      env: { PATH: process.env['PATH'], API_KEY: keyOf(1) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    loop.stdout.on('data', (chunk: Buffer) =>
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)),
    );
    try {
      await sleep(1500);
      expect(lines, 'nothing changed yet: the first held request is still waiting').toEqual([]);
      api.apply(orderCreated({ order_id: 2, organization_id: 1 }, { occurred_at: at(2) }));
      await sleep(1000);
      expect(lines).toEqual(['200']);
      api.apply(statusChanged(2, 'finished', { occurred_at: at(3) }));
      await sleep(1000);
      expect(lines).toEqual(['200', '200']);
      const page = JSON.parse(readFileSync(join(dir, 'orders.json'), 'utf8')) as { total: number };
      // the example lists processing orders: order 2 came and went
      expect(page.total).toBe(1);
    } finally {
      loop.kill('SIGKILL');
      await api.close();
    }
  });

  it('"Cursors": the walk by next links prints every finished order once, newest first', async () => {
    // 450 finished orders over three pages of 200, with processing ones (left out) in between
    const events = Array.from({ length: 600 }, (_, i) =>
      orderCreated(
        { order_id: i + 1, organization_id: 1, status: i % 4 === 3 ? 'publishing' : 'finished' },
        { occurred_at: at(i) },
      ),
    );
    const api = await startTestApi([issueKeyOf(1), issueKeyOf(2), ...events], { listen: true });
    const origin = new URL(api.baseUrl).origin;
    try {
      const script = exampleOf('Cursors: pages that survive inserts').replaceAll(
        'http://localhost:8080',
        origin,
      );
      const walk = await runScript(script, dir, { PATH: process.env['PATH'], API_KEY: keyOf(1) });
      expect(walk.stderr).toBe('');
      expect(walk.status).toBe(0);
      const finished = events
        .filter((event) => event.data.status === 'finished')
        .map((event) => event.data.order_id)
        .reverse();
      expect(finished).toHaveLength(450);
      expect(walk.stdout.split('\n').filter(Boolean).map(Number)).toEqual(finished);
    } finally {
      await api.close();
    }
  });

  it('"A position a publisher builds": the answer to the position kcat reported holds the order', async () => {
    const fixture = await serviceFixture({ orders: 5, env: { READ_POSITION_WAIT_MS: '10000' } });
    const service = await fixture.start();
    const headers = { authorization: `Bearer ${keyOf(1)}` };
    await waitUntil('the service knows the key', async () => {
      const answer = await fetch(fixture.apiUrl(service, '/orders?limit=1'), { headers });
      await answer.text();
      return answer.status === 200;
    });
    const origin = new URL(fixture.apiUrl(service, '/')).origin;
    const event = orderCreated(
      { order_id: 1234, organization_id: 1, status: 'finished' },
      { occurred_at: '2100-01-01T00:00:00.000Z' },
    );
    const script = exampleOf('A position a publisher builds')
      .replaceAll('http://localhost:8080', origin)
      .replaceAll('pr.orders', fixture.topics.orders);
    const run = await runScript(script, dir, {
      PATH: process.env['PATH'],
      API_KEY: keyOf(1),
      KAFKA_BROKERS: inject('kafkaBrokers'),
      ORDER_CREATED_JSON: JSON.stringify(event),
    });
    expect(run.status, `${run.stderr}\n${run.stdout}`).toBe(0);
    expect(readFileSync(join(dir, 'kcat.log'), 'utf8')).toMatch(
      /Message delivered to partition \d+ \(offset \d+\)/,
    );
    expect(JSON.parse(run.stdout)).toMatchObject({ order_id: 1234, data: [] });
  });
});

/**
 * The curl loop of docs/api.md ("Waiting for a change"), run as written with bash and curl against
 * the API on a loopback port: one request per change, each change answered at once with the new
 * page, the saved tag and body following it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../tools/harness.js';
import { issueKeyOf, keyOf, startTestApi } from '../helpers/api.js';
import { at, orderCreated, statusChanged } from '../helpers/events.js';
import { tempDir } from '../helpers/temp.js';

/** The first `sh` block of a section of docs/api.md. */
function exampleOf(section: string): string {
  const text = readFileSync(join(projectRoot, 'docs', 'api.md'), 'utf8');
  const start = text.indexOf(`\n## ${section}\n`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(start));
  if (start < 0 || block?.[1] === undefined) throw new Error(`docs/api.md: no sh example under "${section}"`);
  return block[1];
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
    const loop = spawn('bash', ['-c', script], {
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
});

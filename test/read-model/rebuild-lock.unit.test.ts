/** The rebuild lock is a lease: its holder complete from the start, renewed, and taken over when stale. */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFiles, RebuildLocked } from '../../src/read-model/files.js';
import type { LockHolder } from '../../src/read-model/lease-lock.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('rebuild-lock');
let n = 0;
function files(): ModelFiles {
  const dir = join(root, `data-${(n += 1)}`);
  mkdirSync(dir, { recursive: true });
  return new ModelFiles(dir);
}

function leftBehind(f: ModelFiles, holder: Partial<LockHolder>): void {
  const at = new Date().toISOString();
  writeFileSync(
    f.lockPath,
    JSON.stringify({
      pid: process.pid,
      host: hostname(),
      processStart: null,
      token: 'an-earlier-process',
      purpose: 'version 3 rebuild by the service',
      since: at,
      renewedAt: at,
      ...holder,
    }),
  );
}

describe('the rebuild lock', () => {
  it('takes over a lock naming this pid left by an earlier process (PID 1 of a restarted container)', () => {
    const f = files();
    leftBehind(f, { pid: process.pid });
    const release = f.acquireRebuildLock('rebuild');
    expect(f.lockHolder()).toMatchObject({ pid: process.pid, purpose: 'rebuild' });
    expect(f.lockHolder()?.token).not.toBe('an-earlier-process');
    release();
    expect(f.lockHolder()).toBeNull();
  });

  it('takes over another host’s lock once its lease has run out, and refuses it while the lease runs', () => {
    const f = files();
    leftBehind(f, { host: 'another-host', pid: 4242, renewedAt: new Date(Date.now() - 5000).toISOString() });
    expect(() => f.acquireRebuildLock('rebuild', { ttlMs: 60_000, renewMs: 10_000 })).toThrow(RebuildLocked);
    expect(() => f.acquireRebuildLock('rebuild', { ttlMs: 60_000, renewMs: 10_000 })).toThrow(
      /pid 4242 on another-host .* lease renewed at/,
    );
    const release = f.acquireRebuildLock('rebuild', { ttlMs: 4000, renewMs: 1000 });
    expect(f.lockHolder()?.host).toBe(hostname());
    release();
  });

  it('renews its lease while held, so that a long rebuild keeps it', async () => {
    const f = files();
    const release = f.acquireRebuildLock('rebuild', { ttlMs: 300, renewMs: 50 });
    const first = f.lockHolder()!.renewedAt;
    await new Promise((resolve) => setTimeout(resolve, 400));
    const later = f.lockHolder()!;
    expect(Date.parse(later.renewedAt)).toBeGreaterThan(Date.parse(first));
    expect(later.since).toBe(f.lockHolder()!.since);
    release();
  });

  it('gives the lock to exactly one of several processes trying at once, none seeing an empty holder', async () => {
    const f = files();
    const script = `
      import { ModelFiles, RebuildLocked } from ${JSON.stringify(join(process.cwd(), 'src/read-model/files.ts'))};
      const f = new ModelFiles(${JSON.stringify(f.dir)});
      await new Promise((r) => setTimeout(r, Number(process.argv[1]) - Date.now()));
      try { f.acquireRebuildLock('contender'); console.log('took'); await new Promise((r) => setTimeout(r, 1500)); }
      catch (e) { console.log(e instanceof RebuildLocked ? 'locked' : 'error ' + e); }
    `;
    const at = Date.now() + 3000;
    const outcomes = await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<string>((resolve) => {
            const child = spawn(
              process.execPath,
              ['--import', 'tsx', '--input-type=module', '-e', script, String(at)],
              {
                stdio: ['ignore', 'pipe', 'inherit'],
              },
            );
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
            child.on('exit', () => resolve(out.trim()));
          }),
      ),
    );
    expect(outcomes.sort()).toEqual(['locked', 'locked', 'locked', 'locked', 'locked', 'took']);
  }, 30_000);
});

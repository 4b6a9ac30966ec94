/**
 * The disk reads the benchmarks record with each load (bench/peers/proc.ts): what tells a load that
 * read its data from memory from one that waited on the disk.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { treeDiskReadBytes } from '../../bench/peers/proc.js';

const dir = mkdtempSync(join(tmpdir(), 'proc-io-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mib = 1024 * 1024;

describe('disk reads of a process tree', () => {
  const file = join(dir, 'data');
  writeFileSync(file, Buffer.alloc(8 * mib, 7));

  it('counts what a process of the tree read from the disk, and not what the page cache gave', () => {
    const before = treeDiskReadBytes([process.pid]);
    // O_DIRECT bypasses the page cache: every byte comes from the disk.
    const direct = spawnSync('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M', 'iflag=direct']);
    expect(direct.status).toBe(0);
    const afterDirect = treeDiskReadBytes([process.pid]);
    expect(afterDirect - before).toBeGreaterThanOrEqual(8 * mib);

    // The file was just written, so the page cache holds it: reading it through the cache reads no disk.
    const cached = spawnSync('dd', [`if=${file}`, 'of=/dev/null', 'bs=1M']);
    expect(cached.status).toBe(0);
    expect(treeDiskReadBytes([process.pid]) - afterDirect).toBeLessThan(mib);
  });

  it('reads nothing for a tree with no live process', () => {
    expect(treeDiskReadBytes([2 ** 22 + 1])).toBe(0);
  });
});

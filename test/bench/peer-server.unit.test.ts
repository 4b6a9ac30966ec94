import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { unreachableForOthers } from '../../bench/peers/postgres/server.js';

describe('the peer PostgreSQL server, started by root', () => {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('names the first folder the postgres user cannot enter above the binaries, and none once it can', () => {
    const root = mkdtempSync(join(tmpdir(), 'peer-reach-'));
    made.push(root);
    const bin = join(root, 'install', 'native', 'bin');
    mkdirSync(bin, { recursive: true });
    const initdb = join(bin, 'initdb');
    writeFileSync(initdb, '');
    chmodSync(root, 0o700);
    chmodSync(join(root, 'install'), 0o700);
    expect(unreachableForOthers(initdb)).toBe(root);
    chmodSync(root, 0o755);
    expect(unreachableForOthers(initdb)).toBe(join(root, 'install'));
    chmodSync(join(root, 'install'), 0o711);
    // none below the test's own folder; a folder above it (a private TMPDIR) is not the test's to judge
    const closed = unreachableForOthers(initdb);
    expect(closed === undefined || !closed.startsWith(root)).toBe(true);
  });
});

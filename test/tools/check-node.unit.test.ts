import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../tools/harness.js';

const script = join(projectRoot, 'scripts/check-node.cjs');

/** Runs the check as npm's `pre*` scripts do, for the version given instead of the running one. */
function check(version: string) {
  const run = spawnSync(process.execPath, [script, version], { encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('the Node.js version check', () => {
  it('stops an unsupported Node with one line: the version found, those supported, how to get one', () => {
    expect(check('20.19.0')).toEqual({
      status: 1,
      stdout: '',
      stderr:
        'orders-read-model: Node.js 20.19.0 is not supported; it needs Node.js >=22.15 <25 (24 LTS, or 22.15 and later 22): install one with `nvm install 24`, `fnm install 24` or from https://nodejs.org/ and put it first on PATH.\n',
    });
  });

  it('follows engines in package.json to the patch: 22.14.x and 25 are refused, 22.15.0 to 24.x pass silently', () => {
    const outcome = (version: string) => check(version).status;
    expect(['18.20.8', '22.14.0', '22.14.9', '25.0.0', 'v26.1.0'].map(outcome)).toEqual([1, 1, 1, 1, 1]);
    expect(['22.15.0', 'v22.23.3', '23.11.1', '24.0.0', '24.21.0'].map(outcome)).toEqual([0, 0, 0, 0, 0]);
    expect(check('24.21.0')).toEqual({ status: 0, stdout: '', stderr: '' });
  });

  it('lets the running Node through when preloaded ahead of the service (`node --require`)', () => {
    const run = spawnSync(process.execPath, ['--require', script, '-e', 'console.log("started")'], {
      encoding: 'utf8',
    });
    expect({ status: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      status: 0,
      stdout: 'started\n',
      stderr: '',
    });
  });
});

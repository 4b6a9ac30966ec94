/**
 * The service processes that tests start run from dist/, as `npm start` does, with no transpiler
 * loaded in each process and thread. The global setup (int and campaign projects) builds dist/ when a
 * source is newer than the last build (`dist/.built`, written by `npm run build`); the setup file
 * makes every test file's service commands use it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../tools/harness.js';

const sources = [
  'src',
  'projections',
  'schemas',
  'scripts/build.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
];

function newestChange(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce(
    (newest, name) => Math.max(newest, newestChange(join(path, name))),
    stat.mtimeMs,
  );
}

/** Builds dist/ unless its last build is newer than every source; says which it did. */
export default function ensureBuilt(): void {
  const stamp = join(projectRoot, 'dist', '.built');
  const newestSource = Math.max(...sources.map((source) => newestChange(join(projectRoot, source))));
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= newestSource) {
    console.log('[build] dist/ is newer than every source: the services run from it as built');
    return;
  }
  const started = Date.now();
  execFileSync(process.execPath, [join(projectRoot, 'scripts', 'build.mjs')], {
    cwd: projectRoot,
    stdio: 'inherit',
  });
  console.log(`[build] built dist/ in ${Date.now() - started} ms: the services run from it`);
}

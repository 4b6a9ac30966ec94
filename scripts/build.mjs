// `npm run build`: TypeScript to JavaScript in dist/ (what production runs, with no transpiler loaded),
// plus the files the code reads at run time.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync('dist', { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
// each store's schema: the orders model's and the keys store's
for (const store of ['orders', 'keys'])
  cpSync(`projections/${store}/schema.sql`, `dist/projections/${store}/schema.sql`);
// When the build finished: the tests rebuild dist/ only when a source is newer than this.
writeFileSync('dist/.built', `${new Date().toISOString()}\n`);

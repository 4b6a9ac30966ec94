import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { builtServiceNodeFlags, projectRoot } from '../../tools/harness.js';

describe('the Node flags of the built service', () => {
  it('are the same in npm start, the Dockerfile and the benchmarks’ runtime', () => {
    const start = (
      JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts['start'];
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(
      readFileSync(join(projectRoot, 'Dockerfile'), 'utf8'),
    )?.[1];
    expect(start).toBe(`node ${builtServiceNodeFlags.join(' ')} dist/src/main.js serve`);
    expect(JSON.parse(entrypoint ?? '[]')).toEqual(['node', ...builtServiceNodeFlags, 'dist/src/main.js']);
  });
});

import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelDirFor } from '../../tools/demo-model.js';
import { tempDir } from '../helpers/temp.js';

describe('the demo model directory (tools/demo-model.ts)', () => {
  const root = tempDir('demo-model');

  it('keeps a model made against the same cluster and empties one made against another', () => {
    const dir = join(root, 'demo');
    expect(modelDirFor(dir, 'cluster-a')).toBe('new');
    writeFileSync(join(dir, 'model.sqlite'), 'positions of cluster-a');
    expect(modelDirFor(dir, 'cluster-a')).toBe('kept');
    expect(existsSync(join(dir, 'model.sqlite'))).toBe(true);
    expect(modelDirFor(dir, 'cluster-b')).toBe('emptied');
    expect(existsSync(join(dir, 'model.sqlite'))).toBe(false);
  });

  it('empties a directory with a model but no record of its cluster (made before the record)', () => {
    const dir = join(root, 'older');
    mkdirSync(dir);
    writeFileSync(join(dir, 'model.sqlite'), 'positions of some cluster');
    expect(modelDirFor(dir, 'cluster-a')).toBe('emptied');
    expect(existsSync(join(dir, 'model.sqlite'))).toBe(false);
  });
});

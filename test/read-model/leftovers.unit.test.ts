/**
 * `removeLeftovers` on real files: the model files no pointer names go (with their -wal and -shm),
 * and so do interrupted builds; the served model, the proposal, kept builds and the keys store stay;
 * nothing goes while a service holds the directory or a pointer is broken or missing.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { takeServingLock } from '../../src/read-model/serving-lock.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('leftovers');
let n = 0;

/** A directory with a served model, a proposal, a replaced proposal, a finished unproposed build, a kept build. */
function directory(): {
  files: ModelFiles;
  served: string;
  proposed: string;
  kept: string;
  leftovers: string[];
} {
  const files = new ModelFiles(join(root, `data-${(n += 1)}`));
  const model = (): string => {
    const file = files.newGenerationFile();
    openReadModel(file).close();
    return file;
  };
  const served = model();
  const replaced = model();
  const unproposed = files.finishBuild(writeEmpty(files.newBuildingFile()));
  writeFileSync(`${unproposed}-wal`, '');
  writeFileSync(`${unproposed}-shm`, '');
  const building = files.newBuildingFile();
  writeFileSync(building, '');
  const kept = files.finishBuild(writeEmpty(files.newBuildingFile()), { kept: true });
  const proposed = model();
  files.promote(served);
  files.proposeNext(replaced);
  files.proposeNext(proposed);
  writeFileSync(join(files.dir, 'keys-v1.sqlite'), '');
  return { files, served, proposed, kept, leftovers: [replaced, unproposed, building] };
}

function writeEmpty(file: string): string {
  writeFileSync(file, '');
  return file;
}

describe('files no pointer names', () => {
  it('are deleted with their -wal and -shm; the served model, the proposal, kept builds and the keys store stay', () => {
    const { files, served, proposed, kept, leftovers } = directory();
    expect(basename(kept)).toMatch(/^model-[\w-]+-kept\.sqlite$/);
    expect(files.removeLeftovers('rebuild lock').sort()).toEqual([...leftovers].sort());
    expect(
      readdirSync(files.dir)
        .filter((name) => name.endsWith('.sqlite') || name.includes('.sqlite-'))
        .sort(),
    ).toEqual([basename(served), basename(proposed), basename(kept), 'keys-v1.sqlite'].sort());
    expect(files.removeLeftovers('serving lock')).toEqual([]);
  });

  it('stay while a service holds the directory, and while CURRENT is missing or broken', () => {
    const { files, served, leftovers } = directory();
    const serving = takeServingLock(files.dir, { waitMs: 0 });
    try {
      expect(files.removeLeftovers('rebuild lock')).toEqual([]);
    } finally {
      serving.release();
    }
    writeFileSync(files.pointerPath, 'model-missing.sqlite\n');
    expect(files.removeLeftovers('rebuild lock')).toEqual([]);
    files.promote(writeEmpty(join(files.dir, 'model-x.sqlite')));
    expect(files.removeLeftovers('rebuild lock')).toContain(served);
    expect(leftovers.every((file) => !existsSync(file))).toBe(true);
    const without = new ModelFiles(join(root, `data-${(n += 1)}`));
    const lone = writeEmpty(without.newGenerationFile());
    expect(without.removeLeftovers('rebuild lock')).toEqual([]);
    expect(existsSync(lone)).toBe(true);
  });
});

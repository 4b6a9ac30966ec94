/**
 * `CURRENT` and `NEXT` as `ModelFiles` reads them: absent is "none", a name of an existing model
 * file is that file, anything else is PointerBroken naming the pointer and what to do.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Generation } from '../../src/lifecycle/generation.js';
import { createLogger } from '../../src/logger.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles, PointerBroken } from '../../src/read-model/files.js';
import { tempDir } from '../helpers/temp.js';

describe('the pointers CURRENT and NEXT', () => {
  const dir = tempDir('pointers-unit');
  let n = 0;
  const withModel = (): { files: ModelFiles; model: string } => {
    const files = new ModelFiles(join(dir, `data-${(n += 1)}`));
    const model = files.newGenerationFile();
    openReadModel(model).close();
    return { files, model };
  };

  it('reads an absent pointer as none, and a model file it names as that file', () => {
    const { files, model } = withModel();
    expect(files.currentFile()).toBeNull();
    expect(files.nextFile()).toBeNull();
    files.promote(model);
    files.proposeNext(model);
    expect(files.currentFile()).toBe(model);
    expect(files.nextFile()).toBe(model);
    writeFileSync(files.pointerPath, `  ${basename(model)}  \n\n`);
    expect(files.currentFile()).toBe(model);
  });

  it('refuses a pointer naming a missing file or holding no model file name, saying what to do', () => {
    const { files, model } = withModel();
    files.promote(model);
    rmSync(model);
    expect(() => files.currentFile()).toThrow(PointerBroken);
    expect(() => files.currentFile()).toThrow(
      `${files.pointerPath} names ${basename(model)}, which does not exist in ${files.dir}: restore that file, or write the name of the model to serve into CURRENT`,
    );
    for (const name of ['', 'model-.sqlite', 'model-a.sqlite.building', '../model-a.sqlite', 'CURRENT']) {
      writeFileSync(files.nextPointerPath, name);
      expect(() => files.nextFile(), name).toThrow(
        `${files.nextPointerPath} holds '${name}', which is not the name of a model file (model-….sqlite): remove NEXT to propose nothing, or propose the file again (rebuild).`,
      );
    }
  });

  it('withdraws NEXT only when it names the file, whatever else it says', () => {
    const { files, model } = withModel();
    writeFileSync(files.nextPointerPath, 'model-other.sqlite\n');
    files.clearNext(model);
    expect(() => files.nextFile()).toThrow(PointerBroken);
    writeFileSync(files.nextPointerPath, `${basename(model)}\n`);
    rmSync(model);
    files.clearNext(model);
    expect(files.nextFile()).toBeNull();
  });

  it('creates an empty served model only when there is no CURRENT at all', () => {
    const logger = createLogger('silent');
    const { files } = withModel();
    const first = Generation.openServed(files, logger, new Set());
    first.close();
    expect(files.currentFile()).toBe(first.file);
    const again = Generation.openServed(files, logger, new Set());
    again.close();
    expect(again.file).toBe(first.file);
    writeFileSync(files.nextPointerPath, 'model-gone.sqlite\n');
    expect(() => Generation.openServed(files, logger, new Set())).toThrow(/NEXT names model-gone\.sqlite/);
    rmSync(files.nextPointerPath);
    rmSync(first.file);
    expect(() => Generation.openServed(files, logger, new Set())).toThrow(/CURRENT names model-/);
  });
});

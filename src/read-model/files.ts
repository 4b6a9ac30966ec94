/**
 * The read model on disk: a data directory of generation files and a
 * `CURRENT` pointer naming the live one. A rebuild writes a new generation
 * beside the live one and is promoted by replacing the pointer atomically
 * (write, fsync, rename), so a reader never sees a half-built model and a
 * failed rebuild leaves the live one untouched.
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';

const generationPattern = /^model-[\w-]+\.sqlite$/;
const buildingSuffix = '.building';

export class ModelFiles {
  readonly pointerPath: string;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.pointerPath = join(dir, 'CURRENT');
  }

  /** Absolute path of the live generation, or null before the first one exists. */
  currentFile(): string | null {
    if (!existsSync(this.pointerPath)) return null;
    const name = readFileSync(this.pointerPath, 'utf8').trim();
    return generationPattern.test(name) ? join(this.dir, name) : null;
  }

  /** A fresh path for a generation that is being built. */
  newBuildingFile(): string {
    const stamp = new Date().toISOString().replace(/[-:.TZ]/g, '');
    return join(this.dir, `model-${stamp}-${randomBytes(3).toString('hex')}.sqlite${buildingSuffix}`);
  }

  /** A fresh path for a generation that becomes live at once (the very first one). */
  newGenerationFile(): string {
    return this.newBuildingFile().slice(0, -buildingSuffix.length);
  }

  /** Renames a finished build (closed, journal not in WAL mode) to its final name. */
  finishBuild(buildingFile: string): string {
    const finalFile = buildingFile.slice(0, -buildingSuffix.length);
    renameSync(buildingFile, finalFile);
    return finalFile;
  }

  /** Makes `file` the live generation, atomically. */
  promote(file: string): void {
    const tmp = `${this.pointerPath}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, `${basename(file)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.pointerPath);
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
  }

  /** Deletes finished generations other than `keep` (with their -wal and -shm files); returns what it deleted. */
  removeGenerationsExcept(keep: string): string[] {
    const removed: string[] = [];
    for (const name of readdirSync(this.dir)) {
      if (!generationPattern.test(name) || join(this.dir, name) === keep) continue;
      for (const suffix of ['', '-wal', '-shm']) rmSync(join(this.dir, name + suffix), { force: true });
      removed.push(name);
    }
    return removed;
  }

  /** Builds left behind by interrupted rebuilds. */
  abandonedBuilds(): string[] {
    return readdirSync(this.dir)
      .filter(
        (name) =>
          name.endsWith(buildingSuffix) && generationPattern.test(name.slice(0, -buildingSuffix.length)),
      )
      .map((name) => join(this.dir, name));
  }

  removeBuild(buildingFile: string): void {
    for (const suffix of ['', '-wal', '-shm']) rmSync(buildingFile + suffix, { force: true });
  }
}

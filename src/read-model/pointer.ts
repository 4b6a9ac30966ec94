/**
 * A pointer file of the data directory (`CURRENT`, `NEXT`): one line naming a model file beside it.
 * It is replaced atomically (write, fsync, rename, fsync the directory), so a crash leaves either the
 * old name or the new one.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, join } from 'node:path';

/** The name of a model file: a generation, a kept build, never a build in progress. */
export const generationPattern = /^model-[\w-]+\.sqlite$/;

/** A pointer (`CURRENT`, `NEXT`) that names no model file of the directory. */
export class PointerBroken extends Error {
  readonly code = 'POINTER_BROKEN';
}

export class Pointer {
  readonly path: string;

  /** `whatToDo` ends the message of a broken pointer: what an operator does about it. */
  constructor(
    readonly dir: string,
    name: string,
    private readonly whatToDo: string,
  ) {
    this.path = join(dir, name);
  }

  /**
   * The absolute path of the model file named, or null when the pointer does not exist. Throws
   * PointerBroken when it holds no model file's name or names a missing file.
   */
  file(): string | null {
    const name = this.name();
    if (name === null) return null;
    if (!generationPattern.test(name)) {
      throw new PointerBroken(
        `${this.path} holds '${name}', which is not the name of a model file (model-….sqlite): ${this.whatToDo}.`,
      );
    }
    const file = join(this.dir, name);
    if (!existsSync(file)) {
      throw new PointerBroken(
        `${this.path} names ${name}, which does not exist in ${this.dir}: ${this.whatToDo}.`,
      );
    }
    return file;
  }

  /** What the pointer file says, trimmed; null when it does not exist. */
  name(): string | null {
    return existsSync(this.path) ? readFileSync(this.path, 'utf8').trim() : null;
  }

  /** Makes the pointer name `file`, atomically and durably. */
  point(file: string): void {
    const tmp = `${this.path}.tmp`;
    const fd = openSync(tmp, 'w');
    try {
      writeSync(fd, `${basename(file)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
    syncDirectory(this.dir);
  }

  /** Removes the pointer when it still names `file`. */
  clearIf(file: string): void {
    if (this.name() === basename(file)) rmSync(this.path, { force: true });
  }
}

/** Makes a directory's renames durable. */
export function syncDirectory(dir: string): void {
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

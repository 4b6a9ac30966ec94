/** A snapshot is checked before a new replica serves it: integrity, projection version, positions. */
import { existsSync, openSync, readdirSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { restoreSnapshot, SnapshotRefused, takeSnapshot } from '../../src/cli/snapshot.js';
import { openOneFileModel, openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { issueKeyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';

const dir = tempDir('snapshot-checks');
let n = 0;

/** A served model of 3 000 orders in a data directory of its own, and a snapshot of it. */
function snapshotOfAModel(): string {
  n += 1;
  const liveDir = join(dir, `live-${n}`);
  const files = new ModelFiles(liveDir);
  const file = files.newGenerationFile();
  const model = memoryReadModel(openOneFileModel(file));
  model.applyInBatches(500, [
    issueKeyOf(1),
    ...Array.from({ length: 3000 }, (_, i) =>
      orderCreated(
        { order_id: i + 1, press_release_title: `Release ${i + 1} `.repeat(8) },
        { occurred_at: at(i) },
      ),
    ),
  ]);
  model.db.close();
  files.promote(file);
  const to = join(dir, `snapshot-${n}.sqlite`);
  takeSnapshot(liveDir, to);
  return to;
}

/** Overwrites `pages` pages with zeros from page 3 on, leaving the header readable. */
function zeroPages(file: string, pages: number): void {
  const db = openReadModel(file, { readonly: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const count = db.pragma('page_count', { simple: true }) as number;
  db.close();
  expect(count).toBeGreaterThan(pages + 3);
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, Buffer.alloc(pageSize * pages), 0, pageSize * pages, pageSize * 2);
  } finally {
    closeSync(fd);
  }
}

describe('restoring a snapshot', () => {
  it('refuses a corrupt file, says why, and leaves the data directory without a served model', () => {
    const snapshot = snapshotOfAModel();
    zeroPages(snapshot, 64);
    const replicaDir = join(dir, `replica-${n}`);
    expect(() => restoreSnapshot(replicaDir, snapshot)).toThrow(SnapshotRefused);
    expect(() => restoreSnapshot(replicaDir, snapshot)).toThrow(/fails SQLite's integrity check|malformed/);
    expect(new ModelFiles(replicaDir).currentFile()).toBeNull();
    expect(
      existsSync(replicaDir) ? readdirSync(replicaDir).filter((f) => f.endsWith('.sqlite')) : [],
    ).toEqual([]);
  });

  it('restores a sound one, with its positions', () => {
    const snapshot = snapshotOfAModel();
    const replicaDir = join(dir, `replica-${n}`);
    const facts = restoreSnapshot(replicaDir, snapshot);
    expect(facts.positions).toBe(3001);
    expect(new ModelFiles(replicaDir).currentFile()).toBe(facts.file);
  });
});

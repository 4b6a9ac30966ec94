/**
 * The record of a data directory's skips (`operator-skips.sqlite`): append-only, one row per batch,
 * and the one-time upgrade from `skipped-batches.json`. Many runs at once are shown by
 * test/cli/skip-batch-concurrent.int.test.ts.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import type { OperatorSkip } from '../../src/read-model/operator-skips.js';
import {
  legacySkip,
  openSkipRecord,
  recordedSkips,
  recordSkip,
  renameLegacy,
  type LegacyImport,
} from '../../src/read-model/skip-record.js';
import { tempDir } from '../helpers/temp.js';

const skip = (over: Partial<OperatorSkip> = {}): OperatorSkip => ({
  topic: 'pr.orders',
  partition: 0,
  firstOffset: 4,
  lastOffset: 9,
  reason: 'a producer bug: padded batch',
  by: 'ops@host-1',
  at: '2026-01-01T00:00:00.000Z',
  ...over,
});

describe('the record of operator skips', () => {
  const root = tempDir('skip-record');
  let n = 0;
  const newDir = (): string => {
    const dir = join(root, `data-${(n += 1)}`);
    mkdirSync(dir);
    return dir;
  };

  it('keeps each batch once, oldest first, across opens', () => {
    const dir = newDir();
    expect(recordedSkips(dir)).toEqual([]);
    expect(recordSkip(dir, skip())).toEqual({ recorded: skip(), added: true });
    expect(recordSkip(dir, skip({ partition: 2 }))).toEqual({
      recorded: skip({ partition: 2 }),
      added: true,
    });
    // the same batch again, by someone else for another reason: the first record stands
    expect(recordSkip(dir, skip({ reason: 'again', by: 'b@h', at: 'later' }))).toEqual({
      recorded: skip(),
      added: false,
    });
    // another batch of the same partition: a fact of its own
    expect(recordSkip(dir, skip({ lastOffset: 8 })).added).toBe(true);
    expect(recordSkip(dir, skip({ firstOffset: 5 })).added).toBe(true);
    expect(recordSkip(dir, skip({ topic: 'pr.articles' })).added).toBe(true);
    expect(recordedSkips(dir)).toEqual([
      skip(),
      skip({ partition: 2 }),
      skip({ lastOffset: 8 }),
      skip({ firstOffset: 5 }),
      skip({ topic: 'pr.articles' }),
    ]);
    const files = new ModelFiles(dir);
    expect(files.skipsPath).toBe(join(dir, 'operator-skips.sqlite'));
    expect(files.operatorSkips()).toHaveLength(5);
    expect(files.recordOperatorSkip(skip({ partition: 3 })).added).toBe(true);
  });

  it('is append-only, in WAL mode, and refuses a row that names no batch', () => {
    const dir = newDir();
    recordSkip(dir, skip());
    const db = new Database(join(dir, 'operator-skips.sqlite'));
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(() => db.prepare(`UPDATE operator_skips SET last_offset = 99`).run()).toThrow(
        'operator skips are append-only',
      );
      expect(() => db.prepare(`DELETE FROM operator_skips`).run()).toThrow('operator skips are append-only');
    } finally {
      db.close();
    }
    expect(() => recordSkip(dir, skip({ firstOffset: 10 }))).toThrow(/CHECK constraint failed/);
    expect(() => recordSkip(dir, skip({ partition: -1 }))).toThrow(/CHECK constraint failed/);
    expect(() => recordSkip(dir, skip({ firstOffset: -1 }))).toThrow(/CHECK constraint failed/);
    expect(recordedSkips(dir)).toEqual([skip()]);
  });

  it('imports the entries of skipped-batches.json that name a batch, once, and reports the others', () => {
    const dir = newDir();
    const legacy = [
      { topic: 'pr.orders', partition: 0, from: 4, through: 9, reason: 'padded', by: 'a@h', at: 't1' },
      { topic: 'pr.orders', partition: 1, from: null, through: 20, reason: 'no model', by: 'a@h', at: 't2' },
      { topic: 'pr.orders', partition: 2, from: 7, through: 7, reason: 'one', by: 'a@h', at: 't3' },
    ];
    writeFileSync(join(dir, 'skipped-batches.json'), JSON.stringify(legacy));
    const reports: LegacyImport[] = [];
    expect(recordedSkips(dir, { onImport: (r) => reports.push(r) })).toEqual([
      {
        topic: 'pr.orders',
        partition: 0,
        firstOffset: 4,
        lastOffset: 9,
        reason: 'padded',
        by: 'a@h',
        at: 't1',
      },
      { topic: 'pr.orders', partition: 2, firstOffset: 7, lastOffset: 7, reason: 'one', by: 'a@h', at: 't3' },
    ]);
    expect(reports).toEqual([{ file: join(dir, 'skipped-batches.json'), imported: 2, leftOut: [legacy[1]] }]);
    expect(existsSync(join(dir, 'skipped-batches.json'))).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, 'skipped-batches.json.imported'), 'utf8'))).toEqual(legacy);
    // read once: a later open imports nothing and reports nothing
    recordSkip(dir, skip({ partition: 5 }), { onImport: (r) => reports.push(r) });
    expect(reports).toHaveLength(1);
    expect(recordedSkips(dir)).toHaveLength(3);
  });

  it('opens its file durably: WAL, synchronous FULL, waiting 30 s for another writer', () => {
    const dir = newDir();
    const db = openSkipRecord(dir);
    try {
      expect(db.name).toBe(join(dir, 'operator-skips.sqlite'));
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.pragma('synchronous', { simple: true })).toBe(2);
      expect(db.pragma('busy_timeout', { simple: true })).toBe(30_000);
    } finally {
      db.close();
    }
  });

  it('renames skipped-batches.json once imported, and takes one renamed by another process as done', () => {
    const dir = newDir();
    expect(() => renameLegacy(dir)).not.toThrow();
    writeFileSync(join(dir, 'skipped-batches.json'), '[]');
    // a rename that fails for another reason is not hidden
    mkdirSync(join(dir, 'skipped-batches.json.imported', 'in-the-way'), { recursive: true });
    expect(() => recordedSkips(dir)).toThrow(/ENOTEMPTY|EISDIR|EEXIST/);
    expect(existsSync(join(dir, 'skipped-batches.json'))).toBe(true);
  });

  it('imports a file left by a process that died after importing it without adding anything twice', () => {
    const dir = newDir();
    const legacy = [{ topic: 'pr.orders', partition: 0, from: 4, through: 9, reason: 'r', by: 'b', at: 't' }];
    writeFileSync(join(dir, 'skipped-batches.json'), JSON.stringify(legacy));
    recordedSkips(dir);
    writeFileSync(join(dir, 'skipped-batches.json'), JSON.stringify(legacy));
    const reports: LegacyImport[] = [];
    expect(recordedSkips(dir, { onImport: (r) => reports.push(r) })).toHaveLength(1);
    expect(reports).toEqual([{ file: join(dir, 'skipped-batches.json'), imported: 0, leftOut: [] }]);
  });

  it('refuses a skipped-batches.json that is not a list, saying what to do', () => {
    const dir = newDir();
    writeFileSync(join(dir, 'skipped-batches.json'), '{"not":"a list"}');
    expect(() => recordedSkips(dir)).toThrow(
      `${join(dir, 'skipped-batches.json')} is not a list of skipped batches: move it aside (its skips are then forgotten), or correct it.`,
    );
  });

  it('reads an entry of skipped-batches.json as a batch only when it has a topic, a partition and both offsets', () => {
    const entry = { topic: 't', partition: 1, from: 2, through: 3, reason: 'r', by: 'b', at: 'a' };
    expect(legacySkip(entry)).toEqual({
      topic: 't',
      partition: 1,
      firstOffset: 2,
      lastOffset: 3,
      reason: 'r',
      by: 'b',
      at: 'a',
    });
    expect(legacySkip({ topic: 't', partition: 0, from: 0, through: 0 })).toEqual({
      topic: 't',
      partition: 0,
      firstOffset: 0,
      lastOffset: 0,
      reason: '',
      by: 'unknown',
      at: '',
    });
    for (const bad of [
      null,
      'text',
      7,
      { ...entry, topic: 3 },
      { ...entry, partition: -1 },
      { ...entry, partition: 1.5 },
      { ...entry, partition: '1' },
      { ...entry, from: null },
      { ...entry, from: -1 },
      { ...entry, through: undefined },
      { ...entry, through: 1 },
    ]) {
      expect(legacySkip(bad), JSON.stringify(bad)).toBeNull();
    }
  });
});

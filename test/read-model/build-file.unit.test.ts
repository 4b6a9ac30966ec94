import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readSql } from '../../projections/orders/read-sql.js';
import { openBuildFile, openReadModel, type ReadModelDatabase } from '../../src/read-model/database.js';
import { demoEvents } from '../../tools/demo-data.js';
import { dumpModel, memoryReadModel } from '../helpers/read-model.js';

const dir = mkdtempSync(join(tmpdir(), 'build-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const events = [...demoEvents({ seed: 3, organizations: 5, orders: 400, articlesPerOrder: 3 })];
const schemaOf = (db: ReadModelDatabase): unknown[] =>
  db.prepare(`SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name`).all();
const explicitIndexes = (db: ReadModelDatabase): number =>
  db
    .prepare(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`)
    .pluck()
    .get() as number;

describe('openBuildFile (the rebuild’s bulk-load file)', () => {
  it('builds without secondary indexes, then finishes into the same model and schema as a served file, standalone', () => {
    const served = memoryReadModel(openReadModel(join(dir, 'served.sqlite')));
    served.applyInBatches(97, events);

    const file = join(dir, 'built.sqlite');
    const build = openBuildFile(file);
    expect(build.db.pragma('journal_mode', { simple: true })).toBe('memory');
    expect(build.db.pragma('synchronous', { simple: true })).toBe(0);
    expect(explicitIndexes(build.db)).toBe(0);
    memoryReadModel(build.db).applyInBatches(97, events);
    // A table whole early gets its indexes now (once), the others at the finish.
    build.indexTable('orders');
    build.indexTable('orders');
    const ordersIndexes = (db: ReadModelDatabase): string[] =>
      db
        .prepare(
          `SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND tbl_name = 'orders'`,
        )
        .pluck()
        .all() as string[];
    expect(ordersIndexes(build.db)).toEqual(ordersIndexes(served.db));
    expect(explicitIndexes(build.db)).toBe(ordersIndexes(served.db).length);
    build.finish();
    expect(build.db.open).toBe(false);
    expect(readdirSync(dir).filter((name) => name.startsWith('built.'))).toEqual(['built.sqlite']);

    const built = openReadModel(file, { readonly: true });
    expect(built.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(explicitIndexes(built)).toBeGreaterThan(0);
    expect(schemaOf(built)).toEqual(schemaOf(served.db));
    expect(dumpModel(built)).toEqual(dumpModel(served.db));
    const plan = built
      .prepare(`EXPLAIN QUERY PLAN ${readSql.listOrders}`)
      .all({ orgId: 1, limit: 50, offset: 0 }) as { detail: string }[];
    expect(plan.map((step) => step.detail).join('\n')).toContain('orders_listed_by_org');
    built.close();
    served.db.close();
  });

  it('still rolls a failed transaction back after its pages spilled to the file (the journal is in memory, not off)', () => {
    const file = join(dir, 'rollback.sqlite');
    const build = openBuildFile(file);
    // A tiny page cache makes the transaction write its pages into the file before it ends: only a
    // journal can undo that (with journal_mode OFF the rows would stay or the file would be corrupt).
    build.db.pragma('cache_size = 10');
    const insert = build.db.prepare(`INSERT INTO projection_meta (key, value) VALUES (?, ?)`);
    expect(() =>
      build.db.transaction(() => {
        for (let i = 0; i < 2000; i += 1) insert.run(`probe-${i}`, 'x'.repeat(2000));
        throw new Error('batch failed');
      })(),
    ).toThrow('batch failed');
    expect(
      build.db.prepare(`SELECT count(*) FROM projection_meta WHERE key LIKE 'probe-%'`).pluck().get(),
    ).toBe(0);
    expect(build.db.pragma('integrity_check', { simple: true })).toBe('ok');
    build.db.close();
    expect(existsSync(`${file}-journal`)).toBe(false);
  });
});

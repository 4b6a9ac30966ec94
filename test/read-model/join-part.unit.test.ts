/**
 * A rebuild builds its parts in files of their own and joins each into one (`joinPartSql`,
 * `src/projector/rebuild.ts`). A table the join leaves out, or a column it does not copy, would be
 * lost with no error: whatever a part projected into it is simply not in the file served. So every
 * table of the model's schema is joined, with every column, here checked against the schema itself.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { schemaSqlFile } from '../../projections/orders/schema.js';
import { joinPartSql } from '../../projections/orders/sql.js';
import { joinPart, openBuildFile, type ReadModelDatabase } from '../../src/read-model/database.js';

/** Written by the joined file itself, never by a part: its projection version and topic ids. */
const notJoined = new Set(['projection_meta']);
/** Columns the join leaves for SQLite to assign: dead letters are numbered again in the joined file. */
const assigned: Record<string, string[]> = { dead_letters: ['id'] };

const db = new Database(':memory:');
db.exec(readFileSync(schemaSqlFile, 'utf8'));
const tables = db
  .prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%' ORDER BY name`)
  .pluck()
  .all() as string[];
const columnsOf = (table: string): string[] =>
  (db.pragma(`table_info("${table}")`) as { name: string }[]).map((column) => column.name);

/** Each statement of the join that inserts: its table, the columns it inserts, what it selects, and from where. */
const inserts = joinPartSql.flatMap((sql) => {
  // A whole table, every column in the order both files declare them (the two share one schema).
  const whole = /^INSERT INTO (\w+) SELECT \* FROM part\.(\w+)$/.exec(sql);
  if (whole !== null) {
    const columns = columnsOf(whole[1]!);
    return [{ table: whole[1]!, columns, selected: columns, from: whole[2]! }];
  }
  const insert = /^INSERT INTO (\w+) \(([^)]*)\) SELECT (.*?) FROM part\.(\w+)/s.exec(sql);
  const list = (text: string): string[] => text.split(',').map((column) => column.trim().replaceAll('"', ''));
  return insert === null
    ? []
    : [{ table: insert[1]!, columns: list(insert[2]!), selected: list(insert[3]!), from: insert[4]! }];
});
/** The columns each table is joined with. */
const joined = new Map(inserts.map((insert) => [insert.table, insert.columns]));

describe("a rebuild's join of its parts", () => {
  it("copies each table from the part's same table, each column from its own", () => {
    expect(inserts.length).toBeGreaterThan(0);
    for (const insert of inserts) {
      expect(insert.from, insert.table).toBe(insert.table);
      expect(insert.selected, insert.table).toEqual(insert.columns);
    }
  });

  it('knows every table of the schema', () => {
    expect(tables.length).toBeGreaterThan(notJoined.size);
    const missing = tables.filter((table) => !notJoined.has(table) && !joined.has(table));
    expect(missing, 'tables of schema.sql that joinPartSql leaves out').toEqual([]);
  });

  it.each(tables.filter((table) => !notJoined.has(table)))('copies every column of %s', (table) => {
    const copied = joined.get(table) ?? [];
    const left = columnsOf(table).filter(
      (column) => !copied.includes(column) && !(assigned[table] ?? []).includes(column),
    );
    expect(left, `columns of ${table} that joinPartSql does not copy`).toEqual([]);
  });
});

describe('joinPart on two files', () => {
  const article = (id: number, orderId: number): unknown[] => [
    id,
    orderId,
    `https://news.example/${id}`,
    'news.example',
    1_700_000_000_000 + id,
    0,
    1,
    2,
    0,
    `e${id}`,
  ];
  const insertArticle = (db: ReadModelDatabase, row: unknown[]): void => {
    db.prepare(`INSERT INTO articles VALUES (${row.map(() => '?').join(', ')})`).run(row);
  };
  const rowsOf = (db: ReadModelDatabase): unknown[] =>
    db.prepare('SELECT * FROM articles ORDER BY article_id').raw().all();

  function twoFiles(): { dir: string; build: ReturnType<typeof openBuildFile>; partFile: string } {
    const dir = mkdtempSync(join(tmpdir(), 'join-part-'));
    const partFile = join(dir, 'part.sqlite');
    const part = openBuildFile(partFile);
    for (const id of [3, 1, 2]) insertArticle(part.db, article(id, 10 + id));
    part.db.close();
    return { dir, build: openBuildFile(join(dir, 'build.sqlite')), partFile };
  }

  it("copies every row of the part's tables as stored", () => {
    const { dir, build, partFile } = twoFiles();
    try {
      joinPart(build.db, partFile);
      expect(rowsOf(build.db)).toEqual([1, 2, 3].map((id) => article(id, 10 + id)));
    } finally {
      build.db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails, and copies nothing, when a row is in both files', () => {
    const { dir, build, partFile } = twoFiles();
    try {
      insertArticle(build.db, article(2, 99));
      expect(() => joinPart(build.db, partFile)).toThrow(/UNIQUE constraint failed: articles.article_id/);
      expect(rowsOf(build.db)).toEqual([article(2, 99)]);
    } finally {
      build.db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * A rebuild builds its parts in files of their own and joins each into one (`joinPartSql`,
 * `src/projector/rebuild.ts`). A table the join leaves out, or a column it does not copy, would be
 * lost with no error: whatever a part projected into it is simply not in the file served. So every
 * table of the model's schema is joined, with every column, here checked against the schema itself.
 */
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { schemaSqlFile } from '../../projections/orders/schema.js';
import { joinPartSql } from '../../projections/orders/sql.js';

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

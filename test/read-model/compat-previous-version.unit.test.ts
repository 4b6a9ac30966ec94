/**
 * The current code reads a file of the previous projection version (3) as that version created it:
 * from its checked-in schema (`projections/orders/compat/v3.schema.sql`), not a file faked from
 * today's schema. Without `compat/v3.ts` this code refuses such a file, and these tests fail.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ORDER_STATUSES } from '../../schemas/api.js';
import { describe, expect, it } from 'vitest';
import { openReadModel } from '../../src/read-model/database.js';
import { ReadModelReader } from '../../src/read-model/reader.js';
import { fileIdentity, UnreadableProjectionVersion } from '../../src/read-model/reader-statements.js';
import { articlePublished, at, orderCreated, orderDeleted, statusChanged } from '../helpers/events.js';
import { previousVersionFileFrom } from '../../tools/model-progress.js';
import { memoryReadModel } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { compatModules, previousLayoutOf, staleModules } from '../../projections/orders/compat/readable.js';
import { byColumns, lackedAnswerColumns, readSql, readSqlFor } from '../../projections/orders/read-sql.js';
import { articleColumns, orderColumns } from '../../projections/orders/rows.js';
import { v3 } from '../../projections/orders/compat/v3.js';

/**
 * A file of projection version 3, created from its checked-in schema, holding the rows a projection
 * of the same events leaves, with change counters where version 4 has digests.
 */
function previousVersionFile(dir: string): { file: string; current: ReadModelReader } {
  const projected = join(dir, 'v4.sqlite');
  const { apply } = memoryReadModel(openReadModel(projected));
  for (let id = 1; id <= 7; id += 1) {
    apply(
      orderCreated({ order_id: id, created_at: at(id), status: id % 2 === 0 ? 'finished' : 'publishing' }),
    );
  }
  apply(
    statusChanged(3, 'finished', { occurred_at: at(30) }),
    orderDeleted(5, { occurred_at: at(31) }),
    articlePublished({ article_id: 11, order_id: 2 }, { occurred_at: at(32) }),
    articlePublished(
      { article_id: 12, order_id: 2, website_domain: 'news.example' },
      { occurred_at: at(33) },
    ),
    orderCreated({ order_id: 8, organization_id: 2, created_at: at(9) }),
  );
  const file = join(dir, 'v3.sqlite');
  previousVersionFileFrom(projected, file, { org: { 1: 41, 2: 3 }, order: { 2: 5 } });
  return { file, current: new ReadModelReader(openReadModel(projected, { readonly: true })) };
}

describe('a file of the previous projection version, as it shipped', () => {
  const { file, current } = previousVersionFile(tempDir('compat-v3'));
  const open = (): ReadModelReader =>
    new ReadModelReader(openReadModel(file, { readonly: true, anyProjectionVersion: true }), {
      deepOffsetFrom: 2,
    });

  it('answers the same pages as the current version, deep offsets and status filters included', () => {
    const previous = open();
    for (const status of [null, ...ORDER_STATUSES]) {
      for (const offset of [0, 1, 3, 5]) {
        const query = { orgId: 1, status, limit: 2, offset };
        expect(previous.orderPage(query)).toEqual(current.orderPage(query));
      }
    }
    expect(previous.orderPage({ orgId: 1, status: null, limit: 50, offset: 0 }).total).toBe(6);
  });

  it('answers the same articles as the current version', () => {
    const previous = open();
    expect(previous.articlesOfOrder(1, 2)).toEqual(current.articlesOfOrder(1, 2));
    expect(previous.articlesOfOrder(1, 2)?.articles.map((article) => article.id)).toEqual([12, 11]);
    expect(previous.articlesOfOrder(2, 2)).toBeNull();
  });

  it('tags its answers with its change counters, named by the file', () => {
    const previous = open();
    const name = fileIdentity(previous.db);
    expect(previous.orgDigest(1)).toBe(`${name}.${(41).toString(36)}`);
    expect(previous.orgDigest(2)).toBe(`${name}.3`);
    expect(previous.orgDigest(9)).toBe(`${name}.0`);
    expect(previous.orderDigest(2)).toBe(`${name}.5`);
    expect(current.orgDigest(1)).not.toContain(name);
  });

  it('is the only older version read: a file of the version before it is refused by name', () => {
    const older = new Database(file);
    older.prepare(`UPDATE projection_meta SET value = '2' WHERE key = 'projection_version'`).run();
    older.close();
    try {
      expect(open).toThrow(UnreadableProjectionVersion);
      expect(open).toThrow(/holds projection version 2; this code reads versions 4 and 3 only/);
    } finally {
      const db = new Database(file);
      db.prepare(`UPDATE projection_meta SET value = '3' WHERE key = 'projection_version'`).run();
      db.close();
    }
  });

  it('reads a column an answer shows and the file lacks as null, the rest as it is', () => {
    const { file: lacking } = previousVersionFile(tempDir('compat-lacking'));
    const db = new Database(lacking);
    // as a file of a version before the column was added: without it, and without the index holding it
    db.exec('DROP INDEX articles_of_order; ALTER TABLE articles DROP COLUMN website_domain');
    db.close();
    const previous = new ReadModelReader(
      openReadModel(lacking, { readonly: true, anyProjectionVersion: true }),
    );
    const expected = current.articlesOfOrder(1, 2)!;
    expect(previous.articlesOfOrder(1, 2)).toEqual({
      ...expected,
      articles: expected.articles.map((article) => ({ ...article, website_domain: null })),
    });
    expect(expected.articles.map((article) => article.website_domain)).toContain('news.example');
    expect(previous.orderPage({ orgId: 1, status: null, limit: 50, offset: 0 })).toEqual(
      current.orderPage({ orgId: 1, status: null, limit: 50, offset: 0 }),
    );
  });
});

describe('the modules of older versions', () => {
  it('read the previous version by its columns alone where it has no module of its own', () => {
    expect(previousLayoutOf([], 7)).toMatchObject({ version: 7, tagNamesFile: false });
    expect(previousLayoutOf([v3], 3)).toBe(v3);
    const lacking = {
      orders: new Set(orderColumns.filter((column) => column !== 'title')),
      articles: new Set(articleColumns),
    };
    expect(byColumns(7).sqlFor(lacking).listOrders).toMatch(
      /^SELECT order_id, NULL, listed_status, distribution_ms, created_at_ms, created_at_sub FROM orders/,
    );
    expect(byColumns(7).sqlFor(lacking).articlesOfOrder).toMatch(/^SELECT o\.order_id, NULL, a\.article_id/);
  });

  it('name the file in the tags of a file read with a column as null, which the successor shows', () => {
    const dir = tempDir('compat-tags');
    const file = join(dir, 'lacking.sqlite');
    const { apply, db } = memoryReadModel(openReadModel(file));
    apply(orderCreated({ order_id: 1, created_at: at(1) }), articlePublished({ article_id: 2, order_id: 1 }));
    const whole = new ReadModelReader(db);
    const digest = whole.orderDigest(1);
    expect(digest).not.toContain(fileIdentity(db));
    db.exec('DROP INDEX articles_of_order; ALTER TABLE articles DROP COLUMN website_domain');
    const lacking = new ReadModelReader(db);
    expect(lacking.orderDigest(1)).toBe(`${fileIdentity(db)}.${digest}`);
    expect(lacking.articlesOfOrder(1, 1)?.articles[0]?.website_domain).toBeNull();
    db.close();
  });

  it('read only a text column as null: a file lacking any other answer column needs a module', () => {
    const every = { orders: new Set(orderColumns), articles: new Set(articleColumns) };
    const without = (table: 'orders' | 'articles', column: string) => ({
      ...every,
      [table]: new Set([...every[table]].filter((c) => c !== column)),
    });
    expect(lackedAnswerColumns(every)).toEqual([]);
    expect(readSqlFor(every)).toEqual(readSql); // a whole file is read as ever
    expect(lackedAnswerColumns(without('articles', 'article_url'))).toEqual(['articles.article_url']);
    for (const [table, column] of [
      ['orders', 'created_at_ms'],
      ['orders', 'listed_status'],
      ['orders', 'order_id'],
      ['articles', 'published_at_ms'],
      ['articles', 'article_id'],
    ] as const) {
      expect(() => readSqlFor(without(table, column))).toThrow(
        new RegExp(`lacks ${table}\\.${column}, which is not a text column`),
      );
    }
  });

  it('are of the previous version only: one of a version no longer read is to be deleted', () => {
    expect(staleModules(compatModules)).toEqual([]);
    expect(staleModules([v3, byColumns(4)], 4)).toEqual(['projections/orders/compat/v3.ts']);
    expect(previousLayoutOf([v3], 4)).toMatchObject({ version: 4, tagNamesFile: false });
  });
});

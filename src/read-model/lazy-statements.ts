/**
 * Statements prepared at their first use, once. A file holds the tables of one store (an orders
 * model, or the keys store, each from its own `schema.sql`), so the writer prepares only what the file
 * is written with: a statement naming a table the file lacks is never prepared, and never fails.
 */
import type { Statement } from 'better-sqlite3';
import type { ReadModelDatabase } from './database.js';

export function lazyStatements<K extends string>(
  db: ReadModelDatabase,
  sql: Readonly<Record<K, string>>,
): Readonly<Record<K, Statement>> {
  const prepared = new Map<K, Statement>();
  const statements = {} as Record<K, Statement>;
  for (const name of Object.keys(sql) as K[]) {
    Object.defineProperty(statements, name, {
      enumerable: true,
      get: (): Statement => {
        let statement = prepared.get(name);
        if (statement === undefined) {
          statement = db.prepare(sql[name]);
          prepared.set(name, statement);
        }
        return statement;
      },
    });
  }
  return statements;
}

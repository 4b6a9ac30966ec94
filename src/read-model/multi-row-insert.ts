/** Rows written many to a statement (`manyRowsSql` in `projections/orders/sql.ts`). */
import type { Statement } from 'better-sqlite3';
import { maxRowsPerStatement } from '../../projections/orders/sql.js';
import type { ReadModelDatabase } from './database.js';

/**
 * Rows bound for one multi-row statement: `add` collects a row's values, and every
 * `maxRowsPerStatement` rows, and at `flush`, one statement writes them. A statement is prepared
 * once for each row count met.
 */
export class ManyRows {
  private readonly statements = new Map<number, Statement>();
  private values: unknown[] = [];
  private rows = 0;

  constructor(
    private readonly db: ReadModelDatabase,
    private readonly sqlFor: (rows: number) => string,
  ) {}

  add(row: readonly unknown[]): void {
    for (const value of row) this.values.push(value);
    this.rows += 1;
    if (this.rows === maxRowsPerStatement) this.flush();
  }

  /** Writes the rows collected so far. */
  flush(): void {
    if (this.rows === 0) return;
    let statement = this.statements.get(this.rows);
    if (statement === undefined) {
      statement = this.db.prepare(this.sqlFor(this.rows));
      this.statements.set(this.rows, statement);
    }
    const values = this.values;
    this.values = [];
    this.rows = 0;
    statement.run(values);
  }

  /** Forgets rows collected but not written (a batch that failed before its commit). */
  clear(): void {
    this.values = [];
    this.rows = 0;
  }
}

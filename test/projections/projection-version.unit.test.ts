/**
 * A file records the projection version that built it, and the code opens a file of its own version
 * as its own. So what a file is made of (its tables, and the digests' hashed text, which are stored)
 * cannot change under one version: a schema changed without a new `PROJECTION_VERSION` would leave
 * every existing file open as current, lacking what the new code writes. This test holds the two
 * together: it fails when `schema.sql` or the digests' layout changes and the recorded hash does not.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { digestLayouts } from '../../projections/orders/digests.js';
import {
  PROJECTION_SCHEMA_SHA256,
  PROJECTION_VERSION,
  schemaSqlFile,
} from '../../projections/orders/schema.js';

/** The schema's statements without comments or layout: a comment or a blank line changes no file. */
function statementsOf(sql: string): string {
  return sql
    .split('\n')
    .map((line) => line.replace(/--.*$/, '').trim())
    .filter((line) => line.length > 0)
    .join(' ')
    .replace(/\s+/g, ' ');
}

const made = createHash('sha256')
  .update(statementsOf(readFileSync(schemaSqlFile, 'utf8')))
  .update('\0')
  .update(JSON.stringify(digestLayouts))
  .digest('hex');

describe(`projection version ${PROJECTION_VERSION}`, () => {
  it('is what its files are made of: a changed schema or digest layout is a new version', () => {
    expect(
      PROJECTION_SCHEMA_SHA256,
      `schema.sql or the digests' layout changed: bump PROJECTION_VERSION as projections/README.md says, then set PROJECTION_SCHEMA_SHA256 to ${made}`,
    ).toBe(made);
  });

  it('reads through comments and blank lines, not through a changed statement', () => {
    const sql = `-- a table\nCREATE TABLE t (\n  a INTEGER, -- the a\n\n  b TEXT\n);`;
    expect(statementsOf(sql)).toBe('CREATE TABLE t ( a INTEGER, b TEXT );');
    expect(statementsOf(sql.replace('b TEXT', 'b INTEGER'))).not.toBe(statementsOf(sql));
  });
});

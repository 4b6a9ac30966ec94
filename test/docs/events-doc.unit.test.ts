/**
 * docs/events.md is what publishers read; schemas/events.ts is what the service enforces. These
 * tests hold the two to one contract, both ways: every type, field, topic and dead-letter reason
 * of the code is in the page's tables, and the tables name nothing the code does not know.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { listedStatusOf } from '../../projections/orders/status.js';
import { EventEnvelope, eventDataSchemas, type EventType } from '../../schemas/events.js';
import { defaultTopicNames, topicRoles } from '../../schemas/streams.js';
import { projectRoot } from '../../tools/harness.js';
import { tableCells } from '../../tools/text-sizes.js';

interface Table {
  header: string[];
  rows: string[][];
}

/** The Markdown tables of a text, cells trimmed, the delimiter row left out. */
function tablesOf(markdown: string): Table[] {
  const tables: Table[] = [];
  let current: Table | null = null;
  for (const line of markdown.split('\n')) {
    if (!line.trimStart().startsWith('|')) {
      current = null;
      continue;
    }
    const cells = tableCells(line).map((cell) => cell.trim());
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    if (current === null) {
      current = { header: cells, rows: [] };
      tables.push(current);
    } else {
      current.rows.push(cells);
    }
  }
  return tables;
}

function tableWith(tables: Table[], firstColumn: string, secondColumn?: string): Table {
  const table = tables.find(
    (t) => t.header[0] === firstColumn && (secondColumn === undefined || t.header[1] === secondColumn),
  );
  if (table === undefined) throw new Error(`docs/events.md has no table headed "${firstColumn}"`);
  return table;
}

/** The code spans of a cell: `a`, `b` → ['a', 'b']. */
const codeSpans = (cell: string | undefined): string[] =>
  [...(cell ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? '');

/** The members of the `DeadLetterReason` union, read from its source. */
function deadLetterReasons(): string[] {
  const path = join(projectRoot, 'src', 'read-model', 'decoded.ts');
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const alias = source.statements.find(
    (statement): statement is ts.TypeAliasDeclaration =>
      ts.isTypeAliasDeclaration(statement) && statement.name.text === 'DeadLetterReason',
  );
  if (alias === undefined || !ts.isUnionTypeNode(alias.type)) throw new Error('no DeadLetterReason union');
  return alias.type.types.map((member) => {
    if (!ts.isLiteralTypeNode(member) || !ts.isStringLiteral(member.literal))
      throw new Error(`DeadLetterReason member ${member.getText()} is not a string literal`);
    return member.literal.text;
  });
}

const doc = readFileSync(join(projectRoot, 'docs', 'events.md'), 'utf8');
const tables = tablesOf(doc);
const eventTypes = Object.keys(eventDataSchemas) as EventType[];

describe('docs/events.md against schemas/events.ts', () => {
  it('lists each topic under its default name with exactly the event types it carries', () => {
    const topics = tableWith(tables, 'role', 'topic (default)');
    const documented = Object.fromEntries(
      topics.rows.map((row) => [codeSpans(row[1]).join(), codeSpans(row[3])]),
    );
    const expected = Object.fromEntries(
      Object.entries(topicRoles).map(([role, types]) => [
        defaultTopicNames[role as keyof typeof topicRoles],
        [...types],
      ]),
    );
    expect(documented).toEqual(expected);
  });

  it('lists the envelope fields, and no other', () => {
    const envelope = tableWith(tables, 'field', 'rule');
    const documented = envelope.rows.map((row) => codeSpans(row[0]).join()).sort();
    expect(documented).toEqual(Object.keys(EventEnvelope.shape).sort());
  });

  it('lists every data field of every event type, and no field the schemas lack', () => {
    const data = tableWith(tables, 'type', 'field');
    const documented = data.rows.map((row) => `${codeSpans(row[0]).join()} ${codeSpans(row[1]).join()}`);
    const expected = eventTypes.flatMap((type) =>
      Object.keys(eventDataSchemas[type].shape).map((field) => `${type} ${field}`),
    );
    expect(documented.sort()).toEqual(expected.sort());
  });

  it('says which fields are optional and which may be null, as the schemas do', () => {
    const data = tableWith(tables, 'type', 'field');
    for (const row of data.rows) {
      const type = codeSpans(row[0]).join() as EventType;
      const field = codeSpans(row[1]).join();
      const shape = eventDataSchemas[type].shape as Record<string, z.ZodType>;
      const schema = shape[field];
      const rule = row[2] ?? '';
      expect
        .soft(rule.startsWith('optional'), `${type} ${field} optional`)
        .toBe(schema?.safeParse(undefined).success);
      expect.soft(/\bnull\b/.test(rule), `${type} ${field} nullable`).toBe(schema?.safeParse(null).success);
    }
  });

  it('lists every dead-letter reason the service writes, and no other', () => {
    const reasons = tableWith(tables, 'reason');
    const documented = reasons.rows.map((row) => codeSpans(row[0]).join());
    expect(documented.sort()).toEqual(deadLetterReasons().sort());
  });

  it('shows each internal status as the API lists it', () => {
    const statuses = tableWith(tables, 'internal `status`');
    const named = statuses.rows.filter((row) => /^`[^`]+`$/.test(row[0] ?? ''));
    expect(named.length).toBeGreaterThan(0);
    for (const row of named) {
      const status = codeSpans(row[0]).join();
      expect(row[1], status).toBe(listedStatusOf(status) === null ? 'no' : 'yes');
      expect(codeSpans(row[2]).join(), status).toBe(listedStatusOf(status) ?? '');
    }
    const others = statuses.rows.find((row) => row[0]?.startsWith('anything else'));
    for (const status of codeSpans(others?.[0])) expect(listedStatusOf(status), status).toBeNull();
  });
});

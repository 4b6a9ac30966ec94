/**
 * Every variable the service reads is documented, in the README's short table and in
 * docs/configuration.md, and neither page documents a variable the service does not read.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceEnvSchema } from '../../schemas/config.js';
import { projectRoot } from '../../tools/harness.js';
import { tableCells } from '../../tools/text-sizes.js';

/** The variables named in the first column of a page's tables. */
function variablesIn(page: string): string[] {
  const markdown = readFileSync(join(projectRoot, page), 'utf8');
  return markdown
    .split('\n')
    .filter((line) => line.trimStart().startsWith('|'))
    .flatMap((line) => [...(tableCells(line)[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)])
    .map((match) => match[1] ?? '');
}

const variables = Object.keys(serviceEnvSchema().shape).sort();

describe.each(['README.md', 'docs/configuration.md'])('the configuration table of %s', (page) => {
  it('lists every variable of schemas/config.ts, and no other', () => {
    expect([...new Set(variablesIn(page))].sort()).toEqual(variables);
  });
});

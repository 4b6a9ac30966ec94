/**
 * The pages link to each other by file and heading, and name source files: a renamed heading or a
 * moved file must not leave a newcomer at a dead link. Every relative link of a Markdown file
 * outside bench/ names a file of the repository, and its `#anchor`, when it has one, a heading of
 * that file; every repository path in a code span exists.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../tools/harness.js';
import { markdownFiles } from '../../tools/text-sizes.js';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(join(projectRoot, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? '')));
}

/** Relative links outside code: `[text](target)`. */
function linksOf(file: string): string[] {
  const text = readFileSync(join(projectRoot, file), 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => !/^[a-z]+:/.test(target));
}

/** Repository paths named in code spans (`src/…`, `test/…`), wildcards and placeholders left out. */
function pathsOf(file: string): string[] {
  const text = readFileSync(join(projectRoot, file), 'utf8');
  return [
    ...text.matchAll(/`((?:src|projections|schemas|tools|test|bench|scripts|patches|docs|\.ci)\/[^`\s]*)`/g),
  ]
    .map((match) => match[1] ?? '')
    .filter((path) => !/[*<>…]/.test(path));
}

const pages = markdownFiles(projectRoot).filter((file) => !file.startsWith('bench/'));

describe.each(pages)('the links of %s', (page) => {
  it('lead to a file of the repository and a heading of it', () => {
    const dead = linksOf(page).filter((target) => {
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? page : normalize(join(dirname(page), path));
      if (!existsSync(join(projectRoot, file))) return true;
      return anchor !== undefined && file.endsWith('.md') && !anchorsOf(file).has(anchor);
    });
    expect(dead).toEqual([]);
  });

  it('name only files and folders that exist', () => {
    const missing = pathsOf(page).filter((path) => !existsSync(join(projectRoot, path)));
    expect(missing).toEqual([]);
  });
});

it('the anchor of a heading is the one GitHub gives it', () => {
  expect(anchorOf('Files in DATA_DIR')).toBe('files-in-data_dir');
  expect(anchorOf('/readyz reasons')).toBe('readyz-reasons');
  expect(anchorOf('Tracing (OpenTelemetry)')).toBe('tracing-opentelemetry');
  expect(anchorOf('GET /orders/{id}/articles')).toBe('get-ordersidarticles');
});

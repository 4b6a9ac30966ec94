/**
 * How long the project's Markdown is to read: `npm run docs:check` (`npx tsx tools/text-sizes.ts
 * [DIR]`, default this checkout). For every Markdown file git knows (tracked, or new and not
 * ignored) it prints characters, lines, the longest paragraph and the longest table cell in words,
 * and exits 1 when the README is over its size or a file outside `bench/` has a paragraph or a
 * cell over its bound: a newcomer reads the README in five minutes, and a long explanation belongs
 * in a section of its own rather than in one paragraph or one cell.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isEntryPoint, projectRoot } from './harness.js';

export const bounds = { readmeLines: 150, readmeChars: 12_000, paragraphWords: 120, cellWords: 40 };

/** bench/README.md records measurements and keeps its own form. */
const boundedText = (file: string): boolean => !file.startsWith('bench/');

export interface TextSizes {
  chars: number;
  lines: number;
  /** the longest paragraph (a list item counts as one) and the line it starts on */
  paragraph: { words: number; line: number };
  cell: { words: number; line: number };
}

/** Words as a reader counts them: whitespace-separated runs holding a letter or a digit. */
export function wordCount(text: string): number {
  return text.split(/\s+/).filter((token) => /[\p{L}\p{N}]/u.test(token)).length;
}

/** A table row's cells: split on `|` that is neither escaped nor inside a code span. */
export function tableCells(row: string): string[] {
  const cells: string[] = [];
  let cell = '';
  let inCode = false;
  const inner = row.trim().replace(/^\|/, '').replace(/\|$/, '');
  for (let i = 0; i < inner.length; i += 1) {
    const char = inner.charAt(i);
    if (char === '\\' && inner[i + 1] === '|') {
      cell += '|';
      i += 1;
    } else if (char === '`') {
      inCode = !inCode;
      cell += char;
    } else if (char === '|' && !inCode) {
      cells.push(cell);
      cell = '';
    } else {
      cell += char;
    }
  }
  return [...cells, cell];
}

const isTableRow = (line: string): boolean => line.trimStart().startsWith('|');
const isFence = (line: string): boolean => /^\s*(```|~~~)/.test(line);
const startsBlock = (line: string): boolean =>
  /^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|>|<!--)/.test(line) || /^\s*([-*_])(\s*\1){2,}\s*$/.test(line);

/**
 * Sizes of one Markdown text. Code blocks, headings and HTML comments are not prose: they count in
 * characters and lines only.
 */
export function measure(text: string): TextSizes {
  const lines = text.split('\n');
  const sizes: TextSizes = {
    // characters as code points, as a reader sees them (an em dash is one, not three bytes)
    chars: Array.from(text).length,
    lines: text.endsWith('\n') ? lines.length - 1 : lines.length,
    paragraph: { words: 0, line: 0 },
    cell: { words: 0, line: 0 },
  };
  let paragraph: { words: number; line: number } | null = null;
  const endParagraph = (): void => {
    if (paragraph !== null && paragraph.words > sizes.paragraph.words) sizes.paragraph = paragraph;
    paragraph = null;
  };
  let inFence = false;
  lines.forEach((line, index) => {
    const lineNumber = index + 1;
    if (isFence(line)) {
      endParagraph();
      inFence = !inFence;
      return;
    }
    if (inFence) return;
    if (line.trim() === '') {
      endParagraph();
      return;
    }
    if (isTableRow(line)) {
      endParagraph();
      for (const cell of tableCells(line)) {
        const words = wordCount(cell);
        if (words > sizes.cell.words) sizes.cell = { words, line: lineNumber };
      }
      return;
    }
    if (startsBlock(line)) {
      endParagraph();
      if (/^\s*(#{1,6}\s|<!--)/.test(line)) return;
    }
    paragraph ??= { words: 0, line: lineNumber };
    paragraph.words += wordCount(line);
  });
  endParagraph();
  return sizes;
}

/** What the bounds refuse in one file, as sentences. */
export function problemsOf(file: string, sizes: TextSizes): string[] {
  const problems: string[] = [];
  if (file === 'README.md' && sizes.lines > bounds.readmeLines)
    problems.push(`${file}: ${sizes.lines} lines, over ${bounds.readmeLines}`);
  if (file === 'README.md' && sizes.chars > bounds.readmeChars)
    problems.push(`${file}: ${sizes.chars} characters, over ${bounds.readmeChars}`);
  if (!boundedText(file)) return problems;
  if (sizes.paragraph.words > bounds.paragraphWords)
    problems.push(
      `${file}:${sizes.paragraph.line}: a paragraph of ${sizes.paragraph.words} words, over ${bounds.paragraphWords}`,
    );
  if (sizes.cell.words > bounds.cellWords)
    problems.push(
      `${file}:${sizes.cell.line}: a table cell of ${sizes.cell.words} words, over ${bounds.cellWords}`,
    );
  return problems;
}

export function markdownFiles(dir: string): string[] {
  const listed = execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', '--', '*.md'],
    { cwd: dir, encoding: 'utf8' },
  );
  return [...new Set(listed.split('\n').filter((file) => file !== ''))].sort();
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, column) => {
          const width = widths[column] ?? 0;
          return column === 0 ? cell.padEnd(width) : cell.padStart(width);
        })
        .join('  '),
    )
    .join('\n');
}

if (isEntryPoint(import.meta.url)) {
  const dir = process.argv[2] ?? projectRoot;
  const header = ['file', 'chars', 'lines', 'longest paragraph (words)', 'longest cell (words)'];
  const rows: string[][] = [];
  const problems: string[] = [];
  for (const file of markdownFiles(dir)) {
    const sizes = measure(readFileSync(join(dir, file), 'utf8'));
    rows.push([
      file,
      String(sizes.chars),
      String(sizes.lines),
      String(sizes.paragraph.words),
      String(sizes.cell.words),
    ]);
    problems.push(...problemsOf(file, sizes));
  }
  console.log(table(header, rows));
  console.log(
    `\nbounds: README.md at most ${bounds.readmeLines} lines and ${bounds.readmeChars} characters; outside bench/, paragraphs at most ${bounds.paragraphWords} words and table cells at most ${bounds.cellWords}`,
  );
  if (problems.length > 0) {
    console.error(`\n${problems.join('\n')}`);
    process.exitCode = 1;
  }
}

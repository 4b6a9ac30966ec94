import { describe, expect, it } from 'vitest';
import { measure, problemsOf, tableCells, wordCount } from '../../tools/text-sizes.js';

const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');

describe('text sizes of a Markdown file', () => {
  it('counts words holding a letter or a digit, not punctuation alone', () => {
    expect(wordCount('one, two — `three` 4 –')).toBe(4);
  });

  it('counts characters and lines of the text', () => {
    expect(measure('é\nab\n')).toMatchObject({ chars: 5, lines: 2 });
  });

  it('measures a paragraph across its lines, up to a blank line', () => {
    const sizes = measure(`# Title\n\n${words(3)}\n${words(4)}\n\n${words(5)}\n`);
    expect(sizes.paragraph).toEqual({ words: 7, line: 3 });
  });

  it('takes each list item as a paragraph of its own', () => {
    const sizes = measure(`- ${words(6)}\n  ${words(2)}\n- ${words(3)}\n`);
    expect(sizes.paragraph).toEqual({ words: 8, line: 1 });
  });

  it('does not count code blocks, headings or comments as prose', () => {
    const sizes = measure(`## ${words(50)}\n\n\`\`\`sh\n${words(200)}\n\`\`\`\n\n<!-- ${words(30)} -->\n`);
    expect(sizes.paragraph.words).toBe(0);
  });

  it('measures the longest table cell, a pipe in a code span or escaped staying in its cell', () => {
    expect(tableCells('| `a | b` | c \\| d | e |')).toEqual([' `a | b` ', ' c | d ', ' e ']);
    const sizes = measure(`| a | b |\n| --- | --- |\n| ${words(2)} | ${words(9)} |\n`);
    expect(sizes.cell).toEqual({ words: 9, line: 3 });
  });
});

describe('the bounds', () => {
  const sizes = (paragraph: number, cell: number, lines = 10, chars = 100) => ({
    chars,
    lines,
    paragraph: { words: paragraph, line: 1 },
    cell: { words: cell, line: 2 },
  });

  it('hold the README to 150 lines and 12 000 characters', () => {
    expect(problemsOf('README.md', sizes(10, 10, 150, 12_000))).toEqual([]);
    expect(problemsOf('README.md', sizes(10, 10, 151, 12_001))).toHaveLength(2);
    expect(problemsOf('docs/api.md', sizes(10, 10, 500, 50_000))).toEqual([]);
  });

  it('hold paragraphs to 120 words and cells to 40 everywhere but bench/', () => {
    expect(problemsOf('docs/api.md', sizes(120, 40))).toEqual([]);
    expect(problemsOf('docs/api.md', sizes(121, 41))).toEqual([
      'docs/api.md:1: a paragraph of 121 words, over 120',
      'docs/api.md:2: a table cell of 41 words, over 40',
    ]);
    expect(problemsOf('bench/README.md', sizes(500, 200))).toEqual([]);
  });
});

/**
 * What CI reads from a vitest JSON report (`--reporter=json --outputFile.json=FILE`):
 * `npx tsx tools/test-report.ts failed-files FILE` prints the test files that failed, one a line,
 * relative to this checkout (for one more run of those alone); `npx tsx tools/test-report.ts
 * summary FILE LABEL` prints each failed test with the start of its error, bounded, so that the
 * last lines of a CI log name every failure however long the log above them.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { isEntryPoint, projectRoot } from './harness.js';

/** The part of vitest's JSON report read here (it is Jest's format). */
export interface VitestReport {
  testResults: {
    name: string;
    status: string;
    message?: string;
    assertionResults: { fullName: string; status: string; failureMessages?: string[] }[];
  }[];
}

/** Lines of one failure's message kept in the summary. */
export const messageLines = 12;
/** Characters of one line of a message kept in the summary. */
export const lineChars = 300;

/** The files that failed, a test in them or the file itself (a hook, an import), relative to `root`. */
export function failedFiles(report: VitestReport, root: string): string[] {
  return report.testResults
    .filter(
      (file) => file.status === 'failed' || file.assertionResults.some((test) => test.status === 'failed'),
    )
    .map((file) => relative(root, file.name));
}

/** A stack frame of the test runner or of Node itself, which says nothing of the failure. */
function isRunnerFrame(line: string): boolean {
  return /^\s*at /.test(line) && /node_modules\/|node:internal|<anonymous>/.test(line);
}

function excerpt(message: string): string[] {
  // vitest's messages carry terminal colours when the reporter wrote them so
  // eslint-disable-next-line no-control-regex
  const plain = message.replace(/\u001b\[[0-9;]*m/g, '');
  return plain
    .split('\n')
    .filter((line) => line.trim() !== '' && !isRunnerFrame(line))
    .slice(0, messageLines)
    .map((line) => `      ${line.length > lineChars ? `${line.slice(0, lineChars)}…` : line}`);
}

/** Each failed test (or failed file) with the start of its error; empty when nothing failed. */
export function summary(report: VitestReport, root: string): string[] {
  const lines: string[] = [];
  for (const file of report.testResults) {
    const failed = file.assertionResults.filter((test) => test.status === 'failed');
    if (file.status !== 'failed' && failed.length === 0) continue;
    lines.push(`  ${relative(root, file.name)}`);
    if (failed.length === 0) lines.push(...excerpt(file.message ?? '(no message)'));
    for (const test of failed) {
      lines.push(`    ✗ ${test.fullName}`);
      lines.push(...excerpt((test.failureMessages ?? []).join('\n') || '(no message)'));
    }
  }
  return lines;
}

if (isEntryPoint(import.meta.url)) {
  const [command, file, label = 'tests'] = process.argv.slice(2);
  if ((command !== 'failed-files' && command !== 'summary') || file === undefined) {
    console.error('usage: tsx tools/test-report.ts failed-files|summary REPORT.json [LABEL]');
    process.exit(2);
  }
  const report = JSON.parse(readFileSync(file, 'utf8')) as VitestReport;
  if (command === 'failed-files') {
    for (const name of failedFiles(report, projectRoot)) console.log(name);
  } else {
    const lines = summary(report, projectRoot);
    console.log(
      lines.length === 0 ? `${label}: no failed test in the report` : `${label}: failed\n${lines.join('\n')}`,
    );
  }
}

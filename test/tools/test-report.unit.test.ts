import { describe, expect, it } from 'vitest';
import { failedFiles, lineChars, messageLines, summary, type VitestReport } from '../../tools/test-report.js';

const root = '/checkout';

function report(): VitestReport {
  return {
    testResults: [
      {
        name: '/checkout/test/a.int.test.ts',
        status: 'passed',
        assertionResults: [{ fullName: 'a passes', status: 'passed' }],
      },
      {
        name: '/checkout/test/b.int.test.ts',
        status: 'failed',
        assertionResults: [
          { fullName: 'b passes', status: 'passed' },
          {
            fullName: 'b fails',
            status: 'failed',
            failureMessages: [
              '\u001b[31mAssertionError: expected 1 to be 2\u001b[39m\n\n    at b.int.test.ts:9',
            ],
          },
        ],
      },
      {
        name: '/checkout/test/c.int.test.ts',
        status: 'failed',
        message: 'Hook timed out in 120000ms.',
        assertionResults: [{ fullName: 'c is skipped', status: 'skipped' }],
      },
    ],
  };
}

describe('the test report CI reads', () => {
  it('names the files with a failed test or a failed hook, relative to the checkout', () => {
    expect(failedFiles(report(), root)).toEqual(['test/b.int.test.ts', 'test/c.int.test.ts']);
  });

  it('names nothing when every file passed', () => {
    const passed = report();
    passed.testResults = passed.testResults.slice(0, 1);
    expect(failedFiles(passed, root)).toEqual([]);
    expect(summary(passed, root)).toEqual([]);
  });

  it('summarises each failure with its error, without terminal colours or blank lines', () => {
    expect(summary(report(), root)).toEqual([
      '  test/b.int.test.ts',
      '    ✗ b fails',
      '      AssertionError: expected 1 to be 2',
      '          at b.int.test.ts:9',
      '  test/c.int.test.ts',
      '      Hook timed out in 120000ms.',
    ]);
  });

  it("leaves out the runner's own stack frames", () => {
    const framed = report();
    framed.testResults[2]!.message = [
      'Error: no answer',
      '    at waitFor (/checkout/test/helpers/wait.ts:3:9)',
      '    at runTest (file:///checkout/node_modules/@vitest/runner/dist/chunk-hooks.js:1574:12)',
      '    at new Promise (<anonymous>)',
      '    at processTicksAndRejections (node:internal/process/task_queues:104:5)',
    ].join('\n');
    expect(summary(framed, root).slice(5)).toEqual([
      '      Error: no answer',
      '          at waitFor (/checkout/test/helpers/wait.ts:3:9)',
    ]);
  });

  it('bounds each error: its first lines, each line cut', () => {
    const long = report();
    const message = Array.from({ length: messageLines + 5 }, () => 'x'.repeat(lineChars + 50));
    long.testResults[2]!.message = message.join('\n');
    const lines = summary(long, root).slice(5);
    expect(lines).toHaveLength(messageLines);
    expect(lines[0]).toBe(`      ${'x'.repeat(lineChars)}…`);
  });
});

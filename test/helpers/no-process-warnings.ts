/**
 * Fails a test file on any process warning (TimeoutNegativeWarning, deprecations, …), so that none
 * comes back unnoticed. Set up for every test file (vitest.config.ts `setupFiles`).
 */
import { afterAll, expect } from 'vitest';

const warnings: string[] = [];
process.on('warning', (warning) => warnings.push(`${warning.name}: ${warning.message}`));

afterAll(async () => {
  // Warnings are emitted on a later tick than the code that raised them.
  await new Promise((resolve) => setImmediate(resolve));
  expect(warnings, 'process warnings during this test file').toEqual([]);
});

/** The lines of a child process's output that are Node process warnings (`(node:123) …Warning: …`). */
export function processWarningLines(output: readonly string[]): string[] {
  return output.filter((line) => /^\(node:\d+\) (\[\w+\] )?\w*Warning: /.test(line));
}

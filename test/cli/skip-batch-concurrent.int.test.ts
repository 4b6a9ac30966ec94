/**
 * Operators run `skip-batch` at the same time (a loop over partitions with `&`): every run
 * succeeds and every skip is recorded, none lost to another run's write.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { runServiceCommand } from '../../tools/harness.js';
import { tempDir } from '../helpers/temp.js';

describe('skip-batch runs at once', () => {
  const dir = tempDir('skip-batch-concurrent');

  it('records every skip of many runs on one data directory at once', async () => {
    const dataDir = join(dir, 'data');
    const runs = 12;
    const env = { PATH: process.env['PATH'], DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    const outcomes = await Promise.allSettled(
      Array.from({ length: runs }, (_, partition) =>
        runServiceCommand(
          [
            'skip-batch',
            '--topic',
            'pr.orders',
            '--partition',
            String(partition),
            '--from',
            '4',
            '--through',
            '5',
            '--reason',
            `a padded batch on partition ${partition}`,
          ],
          env,
        ),
      ),
    );
    const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [String(o.reason)] : []));
    expect(failed, failed.join('\n')).toEqual([]);
    const recorded = new ModelFiles(dataDir).operatorSkips().map((s) => s.partition);
    expect(recorded.sort((a, b) => a - b)).toEqual(Array.from({ length: runs }, (_, p) => p));
  }, 300_000);
});

/**
 * The catch-up replay's thread: how its end reaches the main thread. Whatever ends it (the
 * rebuild's own failure, an abort, the thread dying), `done` rejects with the reason, so the
 * lifecycle gives the served model its projector back.
 */
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { startReplayThread } from '../../src/projector/replay-thread.js';
import { silentBroker } from '../helpers/silent-broker.js';
import { tempDir } from '../helpers/temp.js';

const root = tempDir('replay-thread');
/** the replay waits for it */
const silent = await silentBroker();
const configOf = (dataDir: string, brokers: string) =>
  loadConfig({ KAFKA_BROKERS: brokers, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });

describe('the catch-up replay thread', () => {
  it('fails with the reason when another rebuild holds the lock, and says who holds it', async () => {
    const dataDir = join(root, 'locked');
    const release = new ModelFiles(dataDir).acquireRebuildLock('an operator rebuild');
    try {
      const replay = startReplayThread({
        config: configOf(dataDir, silent.address),
        groupId: 'test',
        logger: pino({ level: 'silent' }),
      });
      await expect(replay.done).rejects.toMatchObject({
        code: 'REBUILD_LOCKED',
        message: expect.stringContaining('an operator rebuild') as string,
      });
    } finally {
      release();
    }
  });

  it('fails when its thread dies while it holds the lock', async () => {
    const dataDir = join(root, 'dies');
    const replay = startReplayThread({
      config: configOf(dataDir, silent.address),
      groupId: 'test',
      logger: pino({ level: 'silent' }),
    });
    const files = new ModelFiles(dataDir);
    // it holds the lock while it waits for the broker
    const deadline = Date.now() + 30_000;
    while (files.lockHolder() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(files.lockHolder()?.purpose).toBe('catch-up replay by the service');
    await replay.terminate();
    await expect(replay.done).rejects.toMatchObject({ code: 'REPLAY_THREAD_EXITED' });
  });
});

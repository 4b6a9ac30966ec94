/**
 * One service per data directory: a second service started on a directory another one serves is
 * refused at once, naming the one that serves it, and touches nothing; once the first has ended,
 * however it ended (SIGKILL here), the next start serves at once, with no lease to wait out.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf } from '../helpers/api.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

describe('one service per data directory', () => {
  const dir = tempDir('serving-lock');

  it('refuses a second service on a served DATA_DIR, and serves at once after the first was killed', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [issueKeyOf(1)]);
    const dataDir = join(dir, 'data');
    const start = async (
      groupId: string,
    ): Promise<{ service: ReturnType<typeof spawnService>; adminPort: number }> => {
      const adminPort = await freePort();
      const service = spawnService({
        ...serviceEnv({ topics, dataDir, httpPort: await freePort(), adminPort, groupId }),
        LOG_LEVEL: 'warn',
      });
      return { service, adminPort };
    };
    const healthy = (adminPort: number) => async (): Promise<boolean> =>
      (await fetch(`http://127.0.0.1:${adminPort}/healthz`).catch(() => null))?.status === 200;

    const first = await start('serving-lock-1');
    await waitUntil('the first service answers', healthy(first.adminPort));

    const second = await start('serving-lock-2');
    expect(await second.service.exited).toBe(1);
    expect(second.service.output.join('\n')).toContain(
      `${dataDir} is served by pid ${first.service.child.pid} on`,
    );
    expect(await healthy(first.adminPort)()).toBe(true);

    first.service.child.kill('SIGKILL');
    await first.service.exited;
    const third = await start('serving-lock-3');
    await waitUntil('the next service answers', healthy(third.adminPort), 30_000);
    third.service.child.kill('SIGTERM');
    expect(await third.service.exited).toBe(0);
  });
});

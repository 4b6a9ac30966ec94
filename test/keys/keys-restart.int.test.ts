/**
 * A restart after SIGKILL reads every partition of the keys topic at once. The killed process's
 * membership in a consumer group outlives it by the session timeout (30 s here). The keys store and
 * the orders model keep their positions in SQLite and join a group of their own at every start, so
 * no such membership holds a partition from them: the replica is ready again well before it expires,
 * and revocations published on every partition right after are refused within the campaign's bound.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_PREFIX } from '../../schemas/api.js';
import { freePort } from '../../tools/local-kafka.js';
import { issueKeyOf, keyOf } from '../helpers/api.js';
import { apiKeyRevoked } from '../helpers/events.js';
import { connectedClients, createContractTopics, publish, testKafka, waitUntil } from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

/** The campaign's bound for a revocation (tools/campaign). */
const revocationBoundMs = 5000;
const organizations = Array.from({ length: 12 }, (_, i) => i + 1);

describe('the keys store after a SIGKILL', () => {
  const dir = tempDir('keys-restart');

  it('reads every keys partition at once after a restart, although the killed membership would hold some for 30 s', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin, 3);
    await publish(
      producer,
      topics,
      organizations.map((org) => issueKeyOf(org)),
    );
    // the keys are spread over every partition, so that any partition held from the new process shows
    const spread = await admin.fetchTopicOffsets(topics.apiKeys);
    expect(spread.filter((p) => Number(p.high) > 0)).toHaveLength(3);

    const dataDir = join(dir, 'data');
    const start = async (): Promise<{
      adminPort: number;
      httpPort: number;
      service: ReturnType<typeof spawnService>;
    }> => {
      const adminPort = await freePort();
      const httpPort = await freePort();
      const service = spawnService({
        ...serviceEnv({ topics, dataDir, httpPort, adminPort, groupId: 'keys-restart' }),
        KAFKA_SESSION_TIMEOUT_MS: '30000',
        LOG_LEVEL: 'warn',
      });
      return { adminPort, httpPort, service };
    };
    const ready = (adminPort: number) => async (): Promise<boolean> =>
      (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => null))?.status === 200;
    const status = async (httpPort: number, org: number): Promise<number> =>
      (
        await fetch(`http://127.0.0.1:${httpPort}${API_PREFIX}/orders?limit=1`, {
          headers: { authorization: `Bearer ${keyOf(org)}` },
        }).catch(() => null)
      )?.status ?? 0;

    const first = await start();
    await waitUntil('the first service is ready', ready(first.adminPort), 60_000);
    for (const org of organizations) expect(await status(first.httpPort, org)).toBe(200);
    first.service.child.kill('SIGKILL');
    await first.service.exited;

    const second = await start();
    // Ready well before the killed process's membership expires (30 s): a group of its own at each
    // start, for the keys and for the orders model alike.
    await waitUntil('the restarted service is ready', ready(second.adminPort), 20_000);
    await publish(
      producer,
      topics,
      organizations.map((org) => apiKeyRevoked(`test-api-key-of-org-${org}`)),
    );
    const acknowledged = Date.now();
    const accepted = new Set(organizations);
    while (accepted.size > 0 && Date.now() - acknowledged <= revocationBoundMs) {
      for (const org of [...accepted]) if ((await status(second.httpPort, org)) === 401) accepted.delete(org);
      if (accepted.size > 0) await new Promise((wake) => setTimeout(wake, 20));
    }
    expect([...accepted], `keys still accepted ${revocationBoundMs} ms after their revocation`).toEqual([]);
    expect(await ready(second.adminPort)()).toBe(true);

    second.service.child.kill('SIGTERM');
    expect(await second.service.exited).toBe(0);
  });
});

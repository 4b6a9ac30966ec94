/** A full run of the service, with valid, invalid and revoked keys: no raw key in any log line or in the database. */
import { keysFile } from '../../src/keys/keys-store.js';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../../tools/local-kafka.js';
import { API_PREFIX } from '../../schemas/api.js';
import { sha256Hex } from '../../src/http/bearer-key.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { apiKeyIssued, apiKeyRevoked, at, orderCreated } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';

describe('secrets', () => {
  const dir = tempDir('secrets');

  it('keeps raw API keys out of every log line (at trace level) and out of the database, which holds only SHA-256 hashes', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const valid = 'raw-valid-key-4c1d2f7e9a';
    const revoked = 'raw-revoked-key-8b3e6a0d51';
    const invalid = 'raw-invalid-key-2f9c7e1b44';
    await publish(producer, topics, [
      apiKeyIssued('k-valid', 1, sha256Hex(valid), { occurred_at: at(0) }),
      apiKeyIssued('k-revoked', 1, sha256Hex(revoked), { occurred_at: at(0) }),
      apiKeyRevoked('k-revoked', { occurred_at: at(1) }),
      orderCreated({ order_id: 1, organization_id: 1 }),
    ]);
    const port = await freePort();
    const dataDir = join(dir, 'data');
    const service = spawnService({
      ...serviceEnv({ topics, dataDir, httpPort: port, groupId: uniqueTopicName('secrets') }),
      LOG_LEVEL: 'trace',
    });
    const get = (path: string, authorization?: string) =>
      fetch(`http://127.0.0.1:${port}${API_PREFIX}${path}`, {
        headers: authorization === undefined ? {} : { authorization },
      }).then((r) => r.status);
    // The keys have a consumer of their own: the key may be accepted before the order is applied.
    await waitUntil(
      'the valid key is accepted and order 1 is applied',
      async () => (await get('/orders/1/articles', `Bearer ${valid}`).catch(() => 0)) === 200,
    );
    const statuses = [
      await get('/orders', `Bearer ${valid}`),
      await get('/orders/1/articles', `Bearer ${valid}`),
      await get('/orders?status=bad', `Bearer ${valid}`),
      await get('/orders', `Bearer ${revoked}`),
      await get('/orders', `Bearer ${invalid}`),
      await get('/orders', valid),
      await get('/orders', `Basic ${valid}`),
      await get('/nowhere', `Bearer ${valid}`),
    ];
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(statuses).toEqual([200, 200, 422, 401, 401, 401, 401, 404]);

    const log = service.output.join('\n');
    console.log(`[secrets] scanned ${service.output.length} log lines`);
    expect(service.output.length).toBeGreaterThan(20);
    for (const raw of [valid, revoked, invalid]) expect(log).not.toContain(raw);

    // the keys store holds the keys; the orders model none
    const db = new Database(keysFile(dataDir), { readonly: true });
    const hashes = db.prepare('SELECT key_sha256 FROM api_keys WHERE key_sha256 IS NOT NULL').all() as {
      key_sha256: string;
    }[];
    db.close();
    expect(hashes.map((h) => h.key_sha256)).toEqual([sha256Hex(valid)]);
    const model = new Database(new ModelFiles(dataDir).currentFile()!, { readonly: true });
    expect(model.prepare(`SELECT name FROM sqlite_schema WHERE name = 'api_keys'`).all()).toEqual([]);
    model.close();
    for (const name of readdirSync(dataDir)) {
      const bytes = readFileSync(join(dataDir, name)).toString('latin1');
      for (const raw of [valid, revoked, invalid]) expect(bytes).not.toContain(raw);
    }
  });
});

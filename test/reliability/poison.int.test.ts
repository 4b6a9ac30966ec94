/**
 * Malformed messages interleaved with valid ones, through the running service:
 * every valid event applied, each bad one exactly one dead letter with a reason,
 * and no stall. POISON_COUNT sets how many (npm run test:poison:long: 10 000).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startService } from '../../src/service.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { deadLettersIn, dumpDataDir, dumpModel, memoryReadModel } from '../helpers/read-model.js';
import { seededLog } from '../helpers/scenario.js';
import { serviceEnv } from '../helpers/service-process.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const poison = Number(process.env['POISON_COUNT'] ?? 1000);

describe('poison messages', () => {
  it(`dead-letters each of ${poison} malformed messages once, applies every valid event, and does not stall`, async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    const log = seededLog(99, { orgs: 20, orders: 400, events: Math.max(2000, poison), garbage: poison });
    await publish(producer, topics, log.publications);

    const dir = mkdtempSync(join(tmpdir(), 'poison-'));
    const config = loadConfig({
      ...serviceEnv({
        topics,
        dataDir: join(dir, 'data'),
        httpPort: 0,
        adminPort: 0,
        groupId: uniqueTopicName('poison'),
      }),
      READY_MAX_LAG: '0',
      LOG_LEVEL: 'silent',
      LAG_CHECK_INTERVAL_MS: '200',
    });
    const started = Date.now();
    const service = await startService(config, pino({ level: 'silent' }));
    try {
      await waitUntil(
        'lag is back to zero',
        () => service.health().ready && service.health().totalLag === 0,
        120_000,
      );
    } finally {
      await service.close();
    }
    const drainedMs = Date.now() - started;

    const expected = memoryReadModel();
    expected.apply(...log.history);
    expect(dumpDataDir(join(dir, 'data'))).toEqual(dumpModel(expected.db));
    const letters = deadLettersIn(join(dir, 'data'));
    const byReason: Record<string, number> = {};
    for (const l of letters) byReason[l.reason] = (byReason[l.reason] ?? 0) + 1;
    const wanted: Record<string, number> = {};
    for (const g of log.garbage) wanted[g.reason] = (wanted[g.reason] ?? 0) + 1;
    expect(byReason).toEqual(wanted);
    expect(new Set(letters.map((l) => `${l.topic}/${l.partition}/${l.offset}`)).size).toBe(poison);
    rmSync(dir, { recursive: true, force: true });
    console.log(
      `[poison] ${poison} malformed among ${log.publications.length} messages: dead letters ${JSON.stringify(byReason)}; lag 0 after ${drainedMs} ms`,
    );
  });
});

/**
 * SIGKILL the whole service at random moments mid-ingest; after the last
 * restart catches up, the model must equal a clean projection of the same log.
 * Short by default; `npm run test:crash:long` runs CRASH_KILLS=20 on a bigger log.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp.js';
import { freePort } from '../../tools/local-kafka.js';
import { appliedMessages } from '../../tools/model-progress.js';
import { ModelFiles } from '../../src/read-model/files.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import {
  dumpDataDir,
  dumpModel,
  memoryReadModel,
  recountedCounters,
  storedCounters,
} from '../helpers/read-model.js';
import { keysFile } from '../../src/keys/keys-store.js';
import { seededLog } from '../helpers/scenario.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';

const kills = Number(process.env['CRASH_KILLS'] ?? 4);
const events = Number(process.env['CRASH_EVENTS'] ?? 30_000);

describe('crash safety', () => {
  const dir = tempDir('crash');

  it(
    `loses and doubles nothing when the service is SIGKILLed ${kills} times mid-ingest`,
    async () => {
      const { admin, producer } = await connectedClients(testKafka());
      const topics = await createContractTopics(admin);
      const log = seededLog(4242, { orgs: 50, orders: Math.ceil(events / 10), events, garbage: 100 });
      await publish(producer, topics, log.publications);
      const totalMessages = log.publications.length;

      const dataDir = join(dir, 'data');
      const httpPort = await freePort();
      const env = serviceEnv({
        topics,
        dataDir,
        httpPort,
        groupId: uniqueTopicName('crash'),
      });
      const progressAtKill: number[] = [];
      for (let k = 0; k < kills; k += 1) {
        const before = appliedMessages(dataDir);
        const service = spawnService(env);
        // Kill once this run has applied something but before the log is done: a random point mid-ingest.
        // Kill points spread over the log with some randomness, so every kill lands before its end.
        const share = (totalMessages - before) / (kills - k + 1);
        const target = before + 1 + Math.floor(share * (0.3 + 0.6 * Math.random()));
        await waitUntil(
          `run ${k + 1} has applied past ${target}`,
          () => appliedMessages(dataDir) >= target,
          90_000,
          5,
        ).catch((error: unknown) => {
          console.log(service.output.slice(-30).join('\n'));
          throw error;
        });
        service.child.kill('SIGKILL');
        await service.exited;
        progressAtKill.push(appliedMessages(dataDir));
      }
      const final = spawnService(env);
      await waitUntil('the last run is up', async () => {
        try {
          await fetch(`http://127.0.0.1:${httpPort}/`);
          return true;
        } catch {
          return false;
        }
      });
      await waitUntil('the last run has caught up', () => appliedMessages(dataDir) >= totalMessages, 120_000);
      final.child.kill('SIGTERM');
      expect(await final.exited).toBe(0);

      const db = new Database(new ModelFiles(dataDir).currentFile()!, { readonly: true });
      const keys = new Database(keysFile(dataDir), { readonly: true });
      const expected = memoryReadModel();
      for (const event of log.history) expected.apply(event);
      const midIngestKills = progressAtKill.filter((p) => p < totalMessages).length;
      console.log(
        `[crash] ${totalMessages} messages, ${kills} SIGKILLs (${midIngestKills} before the end of the log) at applied offsets ${progressAtKill.join(', ')}`,
      );
      expect(midIngestKills).toBe(kills);
      expect(dumpDataDir(dataDir)).toEqual(dumpModel(expected.db));
      expect(storedCounters(db)).toEqual(recountedCounters(db));
      const deadLetters = (file: Database.Database): number =>
        (file.prepare('SELECT count(*) AS n FROM dead_letters').get() as { n: number }).n;
      expect(deadLetters(db) + deadLetters(keys)).toBe(log.garbage.length);
      db.close();
      keys.close();
    },
    60_000 + kills * 30_000,
  );
});

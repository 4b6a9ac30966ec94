/**
 * Projector worker threads started and stopped many times, through every path that ends one: a plain
 * stop, a switch to a proposed model (the served thread stops, the candidate's goes on), and
 * SIGTERM to the service process. On Node 24 a statement collected after its thread's environment
 * is gone aborts the process; every one of these must end cleanly and leave no handle behind.
 * WORKER_STRESS_RUNS scales it (npm run test:stress:long: 200 = 160 starts and stops, 20 switches,
 * 20 SIGTERMs).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { newGiveWayFlag, newRequestCounter } from '../../src/shared-flags.js';
import { startProjectorThread } from '../../src/projector/projector-thread.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { waitUntil } from '../helpers/kafka.js';
import { serviceFixture } from '../helpers/service.js';
import { spawnService } from '../helpers/service-process.js';

const runs = Number(process.env['WORKER_STRESS_RUNS'] ?? 20);
const switches = Math.max(2, Math.round(runs / 10));
const sigterms = Math.max(2, Math.round(runs / 10));
const plain = runs - switches - sigterms;

/** Handles of this process other than timers: workers, message ports, sockets, files. */
const handles = (): string[] =>
  process.getActiveResourcesInfo().filter((r) => r !== 'Timeout' && r !== 'Immediate');

/** Waits until the handles are those of `before` again: a socket may take a moment to finish closing. */
async function released(before: string[]): Promise<void> {
  await waitUntil(
    'every handle is released',
    () => JSON.stringify(handles()) === JSON.stringify(before),
    5000,
    20,
  ).catch(() => expect(handles()).toEqual(before));
}

describe('projector worker stress', () => {
  it(
    `starts and stops projector threads ${runs} times (${plain} stops, ${switches} switches, ${sigterms} SIGTERMs) with no abort and no leaked handle`,
    async () => {
      const fixture = await serviceFixture({ orders: 300 });
      const logger = pino({ level: 'silent' });
      const before = handles();

      const started = Date.now();
      let batches = 0;
      for (let i = 0; i < plain; i += 1) {
        // A fresh file each time, so that every thread has the whole log to apply.
        const file = `${fixture.dataDir}-stress-${i}.sqlite`;
        openReadModel(file).close();
        const batchesBefore = batches;
        const thread = await startProjectorThread({
          file,
          groupId: `stress-${i}`,
          config: fixture.config,
          logger,
          requests: newRequestCounter(),
          giveWay: newGiveWayFlag(false),
          onBatch: () => (batches += 1),
        });
        // Some stop at once, some mid-ingest, some after catching up.
        if (i % 3 !== 0) await waitUntil('a batch', () => batches > batchesBefore + (i % 3) - 1, 30_000, 5);
        await thread.stop();
      }
      const plainMs = Date.now() - started;
      await released(before);

      const service = await fixture.start();
      await waitUntil('ready', () => service.health().ready, 60_000);
      const files = new ModelFiles(fixture.dataDir);
      for (let i = 0; i < switches; i += 1) {
        const served = service.health().file;
        const proposed = files.newGenerationFile();
        openReadModel(proposed).close();
        files.proposeNext(proposed);
        await waitUntil(`switch ${i + 1}`, () => service.health().file === proposed, 60_000, 20);
        expect(served).not.toBe(proposed);
      }
      await service.close();
      await released(before);

      const exits: (number | null)[] = [];
      for (let i = 0; i < sigterms; i += 1) {
        const process_ = spawnService({
          ...fixture.env,
          LOG_LEVEL: 'info',
          KAFKA_GROUP_ID: `stress-sigterm-${i}`,
        });
        await waitUntil(
          `the projector of service process ${i + 1} started`,
          () => process_.output.some((line) => line.includes('joined the consumer group')),
          60_000,
          20,
        ).catch((error: unknown) => {
          throw new Error(`${String(error)}; its last output: ${process_.output.slice(-5).join(' | ')}`);
        });
        process_.child.kill('SIGTERM');
        exits.push(await process_.exited);
        expect(process_.output.filter((line) => /Assertion failed|SIGABRT|core dumped/.test(line))).toEqual(
          [],
        );
      }
      console.log(
        `[worker stress] ${plain} thread starts and stops in ${plainMs} ms (${batches} batches applied), ${switches} switches, ${sigterms} SIGTERMs with exit codes ${JSON.stringify(exits)}; handles before and after: ${JSON.stringify(before)}`,
      );
      expect(exits.every((code) => code === 0)).toBe(true);
    },
    // no bound of its own: each wait above has one, and the project's keeps the test from hanging
  );
});

/**
 * Nothing left behind in DATA_DIR: a proposal replaced by a second `rebuild` while no service runs,
 * and a finished build never proposed (a kill between its rename and its proposal), are deleted at
 * the next build or start; never while a service serves the directory; kept builds stay. The
 * service's consumers leave no committed offsets on the broker.
 */
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFiles } from '../../src/read-model/files.js';
import { freePort } from '../../tools/local-kafka.js';
import { runServiceCommand } from '../../tools/harness.js';
import { issueKeyOf } from '../helpers/api.js';
import { at, orderCreated } from '../helpers/events.js';
import {
  connectedClients,
  createContractTopics,
  publish,
  testKafka,
  uniqueTopicName,
  waitUntil,
} from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

const builtInto = (printed: string): string => /into (\S+\.sqlite);/.exec(printed)?.[1] ?? '';

describe('model files no pointer names', () => {
  const dir = tempDir('leftovers-int');

  it('are deleted at the next rebuild or start while no service runs, and kept while one does', async () => {
    const { admin, producer } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await publish(producer, topics, [
      issueKeyOf(1),
      ...[1, 2, 3].map((id) => orderCreated({ order_id: id }, { occurred_at: at(id) })),
    ]);
    const dataDir = join(dir, 'data');
    const groupId = uniqueTopicName('leftovers');
    const env = {
      ...serviceEnv({
        topics,
        dataDir,
        httpPort: await freePort(),
        adminPort: await freePort(),
        groupId,
      }),
      LOG_LEVEL: 'warn',
    };
    const files = new ModelFiles(dataDir);
    /** A build finished but never proposed, as a kill between its rename and its proposal leaves it. */
    const unproposed = (like: string): string => {
      const file = files.newGenerationFile();
      copyFileSync(like, file);
      writeFileSync(`${file}-wal`, '');
      writeFileSync(`${file}-shm`, '');
      return file;
    };
    const gone = (file: string): boolean => ![file, `${file}-wal`, `${file}-shm`].some((f) => existsSync(f));

    // A kept build, served: the directory of a replica that no service serves now.
    const kept = builtInto(await runServiceCommand(['rebuild', '--no-promote'], env));
    expect(kept).toMatch(/-kept\.sqlite$/);
    files.promote(kept);

    // Two rebuilds: the second proposal replaces the first, which nothing would ever serve.
    await runServiceCommand(['rebuild'], env);
    const first = files.nextFile() ?? '';
    const orphan = unproposed(first);
    const printed = await runServiceCommand(['rebuild'], env);
    const second = files.nextFile() ?? '';
    expect(second).not.toBe(first);
    expect(gone(first)).toBe(true);
    expect(gone(orphan)).toBe(true);
    expect(printed).toContain(`Removed ${first}`);
    expect(existsSync(second) && existsSync(kept)).toBe(true);

    // At a start, before anything is served.
    const atStart = unproposed(second);
    const service = spawnService(env);
    await waitUntil('the start removed the build never proposed', () => gone(atStart), 60_000);
    await waitUntil('the service switched to the proposal', () => files.currentFile() === second, 60_000);

    // While a service serves the directory, a rebuild deletes nothing it might serve.
    const whileServed = unproposed(second);
    await runServiceCommand(['rebuild', '--no-promote'], env);
    expect(existsSync(whileServed)).toBe(true);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    // Its consumers (keys, the candidate's, the served model's) committed no offsets: a group whose
    // goodbye the shutdown did not wait for is empty, and the broker removes it by itself.
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
    const committed = await Promise.all(
      groups
        .filter((id) => id.startsWith(groupId))
        .map(async (id) =>
          (await admin.fetchOffsets({ groupId: id, topics: Object.values(topics) })).flatMap((t) =>
            t.partitions
              .filter((p) => p.offset !== '-1')
              .map((p) => `${id} ${t.topic}[${p.partition}] ${p.offset}`),
          ),
        ),
    );
    expect(committed.flat()).toEqual([]);

    const keptAgain = builtInto(await runServiceCommand(['rebuild', '--no-promote'], env));
    expect(gone(whileServed)).toBe(true);
    expect(existsSync(keptAgain) && existsSync(files.currentFile() ?? '')).toBe(true);
  });
});

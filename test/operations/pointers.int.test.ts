/**
 * The pointers of a data directory: a `CURRENT` or `NEXT` that names a missing file, or a name
 * that is no model file's, stops the service at start with exit code 1 and a message naming the
 * pointer, what it says and what to do; the model files are left as they are. An empty model is
 * created only when there is no `CURRENT` at all.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { freePort } from '../../tools/local-kafka.js';
import { connectedClients, createContractTopics, testKafka, uniqueTopicName } from '../helpers/kafka.js';
import { serviceEnv, spawnService } from '../helpers/service-process.js';
import { tempDir } from '../helpers/temp.js';

/** Whether the process ended within `ms`, and how. */
function exitWithin(exited: Promise<number | null>, ms: number): Promise<number | null | 'still running'> {
  return Promise.race([
    exited,
    new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), ms)),
  ]);
}

describe('pointers of the data directory', () => {
  const dir = tempDir('pointers');

  const cases = [
    {
      name: 'CURRENT naming a file that does not exist',
      pointer: 'CURRENT',
      write: (files: ModelFiles, model: string) =>
        writeFileSync(files.pointerPath, `${model.replace(/\.sqlite$/, '-gone.sqlite')}\n`),
      says: /CURRENT names model-\S+-gone\.sqlite, which does not exist in \S+: restore that file, or write the name of the model to serve into CURRENT/,
    },
    {
      name: 'CURRENT holding a name that is no model file',
      pointer: 'CURRENT',
      write: (files: ModelFiles, model: string) => writeFileSync(files.pointerPath, `${model}x\n`),
      says: /CURRENT holds 'model-\S+\.sqlitex', which is not the name of a model file \(model-…\.sqlite\)/,
    },
    {
      name: 'NEXT naming a file that does not exist',
      pointer: 'NEXT',
      write: (files: ModelFiles) => writeFileSync(files.nextPointerPath, 'model-20260101-abcdef.sqlite\n'),
      says: /NEXT names model-20260101-abcdef\.sqlite, which does not exist in \S+: remove NEXT to propose nothing, or propose the file again/,
    },
  ];

  it.each(cases)('stops the service at start with exit code 1: $name', async ({ pointer, write, says }) => {
    const { admin } = await connectedClients(testKafka());
    const topics = await createContractTopics(admin);
    await admin.disconnect();
    const dataDir = join(dir, uniqueTopicName('data'));
    const files = new ModelFiles(dataDir);
    const model = files.newGenerationFile();
    openReadModel(model).close();
    files.promote(model);
    write(files, model.slice(dataDir.length + 1));
    const pointerBefore = readFileSync(join(dataDir, pointer), 'utf8');
    // serving.lock, the service's lock on the directory, aside
    const modelNames = (): string[] =>
      readdirSync(dataDir)
        .filter((n) => n !== 'serving.lock')
        .sort();
    const namesBefore = modelNames();

    const service = spawnService(
      serviceEnv({
        topics,
        dataDir,
        httpPort: await freePort(),
        adminPort: await freePort(),
        groupId: uniqueTopicName('pointers'),
      }),
    );
    const exit = await exitWithin(service.exited, 30_000);
    service.child.kill('SIGKILL');
    expect(exit, service.output.join('\n')).toBe(1);
    expect(service.output.join('\n')).toMatch(says);
    // Nothing was created or repointed: the model the operator meant is where it was.
    expect(readFileSync(join(dataDir, pointer), 'utf8')).toBe(pointerBefore);
    expect(modelNames()).toEqual(namesBefore);
    expect(existsSync(model)).toBe(true);
  });
});

import { join } from 'node:path';
import { keysStoreSchema } from '../../projections/keys/schema.js';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { deadLetters } from '../../src/cli/commands.js';
import { loadConfig } from '../../src/config.js';
import { keysFile } from '../../src/keys/keys-files.js';
import { openReadModel } from '../../src/read-model/database.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { memoryReadModel, testTopics } from '../helpers/read-model.js';
import { tempDir } from '../helpers/temp.js';
import { topicVariables } from '../../schemas/streams.js';

describe('dead-letters', () => {
  it('lists and counts the dead letters of the orders model and of the keys store together', () => {
    const dataDir = join(tempDir('dead-letters'), 'data');
    const files = new ModelFiles(dataDir);
    const served = files.newGenerationFile();
    const orders = memoryReadModel(openReadModel(served));
    orders.apply({ role: 'orders', raw: 'not json' }, { role: 'articles', raw: '{}' });
    orders.db.close();
    files.promote(served);
    const keys = memoryReadModel(openReadModel(keysFile(dataDir), { store: keysStoreSchema }));
    keys.apply({ role: 'apiKeys', raw: 'not json' });
    keys.db.close();
    const printed: string[] = [];
    const ctx = {
      config: loadConfig({
        DATA_DIR: dataDir,
        ...topicVariables(testTopics),
      }),
      logger: pino({ level: 'silent' }),
      print: (line: string) => printed.push(line),
    };
    deadLetters(ctx, 'count', { limit: 0 });
    expect(JSON.parse(printed.pop()!)).toEqual({
      total: 3,
      byReason: { invalid_json: 2, invalid_envelope: 1 },
    });
    deadLetters(ctx, 'list', { limit: 10 });
    expect(printed.map((line) => (JSON.parse(line) as { topic: string }).topic).sort()).toEqual(
      [testTopics.apiKeys, testTopics.articles, testTopics.orders].sort(),
    );
    printed.length = 0;
    deadLetters(ctx, 'list', { limit: 2 });
    expect(printed).toHaveLength(2);
  });
});

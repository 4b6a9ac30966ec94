import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('refuses two TOPIC_* variables naming the same topic, listing every clash', () => {
    const load = (): unknown =>
      loadConfig({
        TOPIC_ORDERS: 'same',
        TOPIC_ARTICLES: 'same',
        TOPIC_ORDER_STATUS: 'x',
        TOPIC_API_KEYS: 'x',
        HTTP_PORT: 'abc',
      });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/TOPIC_ORDERS, TOPIC_ARTICLES: name the same topic 'same'/);
    expect(load).toThrow(/TOPIC_ORDER_STATUS, TOPIC_API_KEYS: name the same topic 'x'/);
    expect(load).toThrow(/HTTP_PORT/);
  });

  it('accepts four distinct topics', () => {
    expect(loadConfig({}).topics).toEqual({
      orders: 'pr.orders',
      orderStatus: 'pr.order-status',
      articles: 'pr.articles',
      apiKeys: 'pr.api-keys',
    });
  });

  it('takes a rebuild work share from 0.05 to 1, a quarter by default', () => {
    expect(loadConfig({}).rebuild.workShare).toBe(0.25);
    expect(loadConfig({ REBUILD_WORK_SHARE: '1' }).rebuild.workShare).toBe(1);
    expect(loadConfig({ REBUILD_WORK_SHARE: '0.05' }).rebuild.workShare).toBe(0.05);
    expect(() => loadConfig({ REBUILD_WORK_SHARE: '0.01' })).toThrow(/REBUILD_WORK_SHARE/);
    expect(() => loadConfig({ REBUILD_WORK_SHARE: 'fast' })).toThrow(/REBUILD_WORK_SHARE/);
    expect(() => loadConfig({ REBUILD_WORK_SHARE: '1.5' })).toThrow(/REBUILD_WORK_SHARE/);
  });

  it('stops the executable with exit code 2 and the list of problems', () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
      env: { PATH: process.env['PATH'], TOPIC_ORDERS: 'same', TOPIC_API_KEYS: 'same' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(
      /Invalid configuration:\n.*TOPIC_ORDERS, TOPIC_API_KEYS: name the same topic 'same'/,
    );
  });
});

import { describe, expect, it } from 'vitest';
import {
  categoryOfUrl,
  isMainThreadProfile,
  profileTimeByCategory,
  scaledToCpu,
  type CpuProfile,
} from '../../bench/profile/categories.js';

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url },
  children,
});

/** root → reader.js → all (native); root → pino → writeSync (native); root → (idle), (garbage collector) */
const profile: CpuProfile = {
  nodes: [
    frame(1, '(root)', '', [2, 4, 6, 7, 8]),
    frame(2, 'readPage', 'file:///srv/app/dist/src/read-model/reader.js', [3]),
    frame(3, 'all', ''),
    frame(4, 'write', 'file:///srv/app/node_modules/pino/lib/proto.js', [5]),
    frame(5, 'writeSync', ''),
    frame(6, '(idle)', ''),
    frame(7, '(garbage collector)', ''),
    frame(8, '(program)', ''),
  ],
  startTime: 1000,
  endTime: 1750,
  // each sample stands for the interval up to the next one
  samples: [3, 3, 5, 2, 6, 7, 8, 3],
  timeDeltas: [0, 100, 100, 100, 100, 100, 100, 100],
};

describe('bench:profile categories', () => {
  it('gives a native call to its caller, leaves idle out and honours the window', () => {
    expect(Object.fromEntries(profileTimeByCategory(profile))).toEqual({
      // the last sample, at 1 700 µs, stands for the 50 µs up to the profile's end
      'own code and the SQLite it calls': 350,
      'logging (pino)': 100,
      gc: 100,
      'runtime (V8 and libuv, no JS frame)': 100,
    });
    // samples at 1 300 µs to 1 500 µs: own code, idle, gc
    expect(Object.fromEntries(profileTimeByCategory(profile, 1300, 1500))).toEqual({
      'own code and the SQLite it calls': 100,
      gc: 100,
    });
  });

  it("counts a call into Node's fs or timers for its caller, and one the event loop made as Node's", () => {
    const nested: CpuProfile = {
      nodes: [
        frame(1, '(root)', '', [2, 4]),
        frame(2, 'write', 'file:///srv/app/node_modules/pino/lib/proto.js', [3]),
        frame(3, 'writeSync', 'node:fs'),
        frame(4, 'listOnTimeout', 'node:internal/timers', [5]),
        frame(5, 'emit', 'node:events'),
      ],
      startTime: 0,
      endTime: 300,
      samples: [3, 5, 3],
      timeDeltas: [0, 100, 100],
    };
    expect(Object.fromEntries(profileTimeByCategory(nested))).toEqual({
      'logging (pino)': 200,
      'other node modules': 100,
    });
  });

  it("tells the main thread's file from a worker's, and scales shares to a thread's CPU", () => {
    expect(isMainThreadProfile('CPU.20261203.122750.4261.0.001.cpuprofile')).toBe(true);
    expect(isMainThreadProfile('CPU.20261203.122750.4261.2.003.cpuprofile')).toBe(false);
    expect(() => isMainThreadProfile('profile.cpuprofile')).toThrow(/not a --cpu-prof file name/);
    const sampled = new Map([
      ['gc', 100],
      ['fastify', 300],
    ] as const);
    expect(scaledToCpu(sampled, 40)).toEqual({ gc: 10, fastify: 30 });
    expect(scaledToCpu(new Map(), 40)).toEqual({});
  });

  it('names libraries by their folder and Node by its module', () => {
    expect(categoryOfUrl('file:///x/node_modules/fastify/lib/reply.js')).toBe('fastify');
    expect(categoryOfUrl('file:///x/node_modules/@fastify/ajv-compiler/index.js')).toBe('fastify');
    expect(categoryOfUrl('file:///x/node_modules/sonic-boom/index.js')).toBe('logging (pino)');
    expect(categoryOfUrl('file:///x/node_modules/@pinojs/redact/index.js')).toBe('logging (pino)');
    expect(categoryOfUrl('file:///x/node_modules/better-sqlite3/lib/methods/transaction.js')).toBe(
      'better-sqlite3 (its JavaScript)',
    );
    expect(categoryOfUrl('file:///x/node_modules/kafkajs/src/network/connection.js')).toBe('kafkajs');
    expect(categoryOfUrl('file:///x/node_modules/prom-client/lib/histogram.js')).toBe(
      'metrics (prom-client)',
    );
    expect(categoryOfUrl('file:///x/node_modules/left-pad/index.js')).toBe('other libraries');
    expect(categoryOfUrl('node:_http_server')).toBe('node http and net');
    expect(categoryOfUrl('node:internal/streams/writable')).toBe('node http and net');
    expect(categoryOfUrl('node:zlib')).toBe('zlib');
    expect(categoryOfUrl('node:internal/crypto/hash')).toBe('crypto');
    expect(categoryOfUrl('node:internal/timers')).toBe('other node modules');
    expect(categoryOfUrl('file:///x/dist/src/http/app.js')).toBe('own code and the SQLite it calls');
    expect(categoryOfUrl('')).toBeNull();
  });
});

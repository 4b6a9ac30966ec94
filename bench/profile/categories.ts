/**
 * Where a V8 CPU profile (`node --cpu-prof`) spent its time, by category: each sample goes to the
 * category of its stack's innermost frame that names one (a library by its folder under
 * node_modules, Node's HTTP stack by its module, the project's own code by its path), so that a
 * native call counts for the JavaScript that made it, and a call into Node's other modules (fs,
 * events, timers) counts for its caller. V8 gives a native method no frame of its own, so the time
 * SQLite spends in a statement (`stmt.all()`) is the calling function's, and V8 may inline the
 * function a transaction runs into better-sqlite3's wrapper: 'own code and the SQLite it calls' and
 * 'better-sqlite3 (its JavaScript)' are to be read together (BEGIN and COMMIT alone cost about 2 µs
 * a transaction here, measured in a loop). Only samples inside a time window count (the window of
 * one load), with the clock of `process.hrtime` (V8 and libuv read the same monotonic clock here).
 */

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export const categories = [
  'own code and the SQLite it calls',
  'better-sqlite3 (its JavaScript)',
  'logging (pino)',
  'fastify',
  'node http and net',
  'zlib',
  'crypto',
  'metrics (prom-client)',
  'validation (zod)',
  'kafkajs',
  'gc',
  'runtime (V8 and libuv, no JS frame)',
  'other node modules',
  'other libraries',
] as const;
export type Category = (typeof categories)[number];

const libraries: readonly [RegExp, Category][] = [
  [
    /\/node_modules\/(pino|pino-[^/]+|@pinojs\/[^/]+|sonic-boom|thread-stream|fast-redact|quick-format-unescaped|atomic-sleep|on-exit-leak-free)\//,
    'logging (pino)',
  ],
  [/\/node_modules\/better-sqlite3\//, 'better-sqlite3 (its JavaScript)'],
  [
    /\/node_modules\/(fastify|@fastify\/[^/]+|find-my-way|avvio|light-my-request|fast-json-stringify|fast-querystring|toad-cache|process-warning|abstract-logging|rfdc|fast-decode-uri-component|safe-regex2|ret|json-schema-ref-resolver|secure-json-parse|fast-uri|ajv|content-type)\//,
    'fastify',
  ],
  [/\/node_modules\/kafkajs\//, 'kafkajs'],
  [/\/node_modules\/(prom-client|tdigest|bintrees)\//, 'metrics (prom-client)'],
  [/\/node_modules\/zod\//, 'validation (zod)'],
  [/\/node_modules\//, 'other libraries'],
];

const nodeModules: readonly [RegExp, Category][] = [
  [/^node:(_http_|http$|net$|internal\/(http|stream_base_commons|streams|net|dns))/, 'node http and net'],
  [/^node:(zlib|internal\/zlib)/, 'zlib'],
  [/^node:(crypto|internal\/crypto)/, 'crypto'],
  [/^node:/, 'other node modules'],
];

/** The category of one frame's script, or null for a frame that names none (native, eval). */
export function categoryOfUrl(url: string): Category | null {
  if (url === '') return null;
  for (const [pattern, category] of url.startsWith('node:') ? nodeModules : libraries)
    if (pattern.test(url)) return category;
  return url.startsWith('file://') || url.startsWith('/') ? 'own code and the SQLite it calls' : null;
}

/** Time per category in µs, of the samples whose time falls inside [fromUs, toUs]; idle time left out. */
export function profileTimeByCategory(
  profile: CpuProfile,
  fromUs = -Infinity,
  toUs = Infinity,
): Map<Category, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const memo = new Map<number, Category | null>();
  const categoryOfNode = (id: number): Category | null => {
    if (memo.has(id)) return memo.get(id)!;
    const { functionName, url } = byId.get(id)!.callFrame;
    let category: Category | null;
    if (functionName === '(idle)') category = null;
    else if (functionName === '(garbage collector)') category = 'gc';
    else if (functionName === '(program)') category = 'runtime (V8 and libuv, no JS frame)';
    else {
      // a frame of Node's own modules other than HTTP, zlib and crypto (fs, events, timers, …)
      // counts for the library or code that called it: pino's fs.writeSync is logging
      const own = categoryOfUrl(url);
      const parent = parents.get(id);
      const caller =
        parent === undefined || byId.get(parent)!.callFrame.functionName === '(root)'
          ? null
          : categoryOfNode(parent);
      category =
        own === null
          ? (caller ?? 'runtime (V8 and libuv, no JS frame)')
          : own === 'other node modules' &&
              caller !== null &&
              caller !== 'runtime (V8 and libuv, no JS frame)'
            ? caller
            : own;
    }
    memo.set(id, category);
    return category;
  };
  const totals = new Map<Category, number>();
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i += 1) {
    at += profile.timeDeltas[i] ?? 0;
    // a sample stands for the interval up to the next one (the last: up to the profile's end)
    const span = profile.timeDeltas[i + 1] ?? Math.max(0, profile.endTime - at);
    if (at < fromUs || at > toUs) continue;
    const category = categoryOfNode(profile.samples[i]!);
    if (category !== null) totals.set(category, (totals.get(category) ?? 0) + span);
  }
  return totals;
}

/** Which thread a profile file of `--cpu-prof` is of: CPU.<date>.<time>.<pid>.<thread id>.<n>.cpuprofile, thread 0 the main one. */
export function isMainThreadProfile(fileName: string): boolean {
  const threadId = fileName.split('.')[4];
  if (threadId === undefined || !/^\d+$/.test(threadId))
    throw new Error(`not a --cpu-prof file name: ${fileName}`);
  return threadId === '0';
}

/** Each category's share of a thread group's samples, times the group's CPU (µs per request); none without samples. */
export function scaledToCpu(
  sampled: ReadonlyMap<Category, number>,
  cpuMicros: number,
): Partial<Record<Category, number>> {
  const total = [...sampled.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return {};
  return Object.fromEntries(
    [...sampled].map(([c, us]) => [c, Math.round((us / total) * cpuMicros * 10) / 10]),
  );
}

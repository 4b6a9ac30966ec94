/**
 * Load from `wrk` (Debian's package, /usr/bin/wrk), driven by a generated Lua script that sends a
 * pre-generated sequence of requests in order: every side of a comparison gets the same requests in
 * the same order (`requestSequence`, drawn with a seeded generator, never from the clock).
 *
 * Two kinds of load:
 * - closed loop (no `rate`): `connections` connections each send a request as soon as the previous
 *   one is answered: the most the server answers at that concurrency;
 * - a fixed offered rate (`rate`, requests per second): the script's `delay()` gives each request a
 *   slot on a schedule of `rate` slots per second (monotonic clock through LuaJIT's FFI) and holds the
 *   connection that asks until its slot is due. A connection that asks after its slot has passed
 *   sends at once and the lateness is counted (`lateSlots`): latency is measured from the send, so a
 *   side that cannot keep up shows an achieved rate below the offered one and late slots, not a
 *   latency that includes the queue. `h2load --rps` holds a rate too, but sends one set of headers
 *   with every request, and these loads need each request's own key.
 *
 * Each wrk thread's requests are counted (`perThread`); with as many threads as connections, that
 * is a count per connection. The CPU time wrk itself used comes from the shell that waited for it
 * (its cutime and cstime), so the share of the machine the generator took is known.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '../../tools/demo-data.js';

export interface WrkRequest {
  path: string;
  key: string;
  /** other headers of the request (`If-None-Match`, `X-Read-Position`), name → value */
  headers?: Record<string, string>;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** socket errors and answers with a status of 400 or more */
  errors: number;
  /** CPU time of wrk itself, ms */
  wrkCpuMs: number;
  /** requests sent by each wrk thread */
  perThread: number[];
  /** at a fixed rate: the slots whose request left after its time, and their mean lateness */
  lateSlots: number;
  meanLateMs: number;
}

/** `count` requests drawn from `requests` with a generator seeded by `seed`: the same list for every side. */
export function requestSequence(requests: readonly WrkRequest[], count: number, seed: number): WrkRequest[] {
  if (requests.length === 0) throw new Error('a load needs at least one request to send');
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => requests[Math.floor(random() * requests.length)]!);
}

/** A request sequence in a file, one tab-separated (path, Authorization) pair a line, for wrk to read. */
export interface SequenceFile {
  file: string;
  length: number;
  remove: () => void;
}

export function writeSequence(requests: readonly WrkRequest[]): SequenceFile {
  const dir = mkdtempSync(join(tmpdir(), 'wrk-sequence-'));
  const file = join(dir, 'requests.tsv');
  const line = (r: WrkRequest): string =>
    [r.path, `Bearer ${r.key}`, ...Object.entries(r.headers ?? {}).flat()].join('\t');
  writeFileSync(file, requests.map((r) => `${line(r)}\n`).join(''));
  return { file, length: requests.length, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The Lua script. Each thread reads the sequence (a table literal of it would stop at LuaJIT's 65 536
 * constants per function) and starts at its own share of it; `slots`, `late`, `lateMs` and `sent` are
 * globals so that `done()` can read each thread's.
 */
function luaScript(sequenceFile: string, rate: number, threads: number): string {
  return `local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function nowMs()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1000000
end
local requests = {}
local at = 0
local interval = ${rate > 0 ? (1000 * threads) / rate : 0}
local first = nil
slots = 0
late = 0
lateMs = 0
sent = 0
local threadList = {}
function setup(thread)
  threadList[#threadList + 1] = thread
  thread:set("index", #threadList - 1)
end
function init(args)
  for line in io.lines(${JSON.stringify(sequenceFile)}) do
    local fields = {}
    for field in (line .. "\\t"):gmatch("([^\\t]*)\\t") do fields[#fields + 1] = field end
    local headers = { ["Authorization"] = fields[2] }
    for i = 3, #fields - 1, 2 do headers[fields[i]] = fields[i + 1] end
    requests[#requests + 1] = { fields[1], headers }
  end
  at = math.floor(index * #requests / ${threads})
end
function request()
  at = at % #requests + 1
  sent = sent + 1
  local r = requests[at]
  return wrk.format("GET", r[1], r[2])
end
${
  rate > 0
    ? `function delay()
  local now = nowMs()
  if first == nil then first = now end
  local due = first + slots * interval
  slots = slots + 1
  if due <= now then
    if now - due >= 1 then
      late = late + 1
      lateMs = lateMs + (now - due)
    end
    return 0
  end
  return math.floor(due - now)
end`
    : ''
}
function done(summary, latency, requests)
  local e = summary.errors
  local perThread = {}
  local lateSlots, lateTotal = 0, 0
  for i, thread in ipairs(threadList) do
    perThread[i] = tostring(thread:get("sent"))
    lateSlots = lateSlots + thread:get("late")
    lateTotal = lateTotal + thread:get("lateMs")
  end
  io.write(string.format('WRK_JSON {"requests":%d,"durationUs":%d,"errors":%d,"p50Us":%d,"p99Us":%d,"meanUs":%f,"perThread":[%s],"lateSlots":%d,"lateMs":%f}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean, table.concat(perThread, ","),
    lateSlots, lateTotal))
end
`;
}

export interface WrkOptions {
  /** offered requests per second; none for a closed loop */
  rate?: number;
  /** wrk threads (default 1); at most `connections` */
  threads?: number;
}

/**
 * Runs wrk against `origin` (`http://127.0.0.1:port`) for `seconds`, sending `load` in order: a
 * sequence file, or requests from which a sequence is drawn with a fixed seed.
 */
export async function wrk(
  origin: string,
  load: SequenceFile | readonly WrkRequest[],
  seconds: number,
  connections = 10,
  options: WrkOptions = {},
): Promise<WrkResult> {
  const sequence = 'file' in load ? load : writeSequence(requestSequence(load, 100_000, 1));
  const threads = Math.min(connections, options.threads ?? 1);
  const dir = mkdtempSync(join(tmpdir(), 'wrk-'));
  const script = join(dir, 'load.lua');
  writeFileSync(script, luaScript(sequence.file, options.rate ?? 0, threads));
  try {
    const output = await new Promise<string>((resolve, reject) => {
      // the shell reports its own /proc stat after waiting for wrk: cutime and cstime are wrk's
      const child = spawn(
        'sh',
        [
          '-c',
          'wrk "$@"; code=$?; cat /proc/$$/stat; exit $code',
          'sh',
          `-t${threads}`,
          `-c${connections}`,
          `-d${seconds}s`,
          '--timeout',
          '10s',
          '-s',
          script,
          origin,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.on('error', reject);
      child.on('exit', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}: ${out}`)),
      );
    });
    const json = /^WRK_JSON (.*)$/m.exec(output)?.[1];
    if (json === undefined) throw new Error(`wrk printed no figures: ${output}`);
    const figures = JSON.parse(json) as {
      requests: number;
      durationUs: number;
      errors: number;
      p50Us: number;
      p99Us: number;
      meanUs: number;
      perThread: number[];
      lateSlots: number;
      lateMs: number;
    };
    const stat = output.trim().split('\n').at(-1) ?? '';
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const measuredSeconds = figures.durationUs / 1e6;
    return {
      requests: figures.requests,
      seconds: measuredSeconds,
      rps: Math.round(figures.requests / measuredSeconds),
      p50Ms: figures.p50Us / 1000,
      p99Ms: figures.p99Us / 1000,
      meanMs: figures.meanUs / 1000,
      errors: figures.errors,
      wrkCpuMs: (Number(fields[13]) + Number(fields[14])) * 10,
      perThread: figures.perThread,
      lateSlots: figures.lateSlots,
      meanLateMs: figures.lateSlots === 0 ? 0 : Math.round((figures.lateMs / figures.lateSlots) * 100) / 100,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (!('file' in load)) sequence.remove();
  }
}

/** Stops the process with exit code 2 unless `wrk` is on the PATH: before hours of other phases, not after. */
export function requireWrk(): void {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (error) {
    // wrk --version exits 1 after printing its version; only a missing binary is an error here
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return;
    console.error(
      'wrk is not on the PATH (Debian: apt-get install wrk); the peer and workers phases need it',
    );
    process.exit(2);
  }
}

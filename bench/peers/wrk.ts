/**
 * Load from `wrk` (Debian's package, /usr/bin/wrk): a closed loop of `connections` connections on one
 * thread of its own, each request drawn at random from a list of (path, key) pairs by a generated Lua
 * script (with other headers where the pair names them), which also reports the figures as one JSON line. The CPU time wrk itself used comes from the
 * shell that waited for it (its cutime and cstime), so the share of the machine the generator took is
 * known.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
}

/**
 * The Lua script: it reads the (path, header) pairs from `requestsFile`, one tab-separated pair a
 * line, in each thread (a table literal of them stops at LuaJIT's 65 536 constants per function).
 */
function luaScript(requestsFile: string): string {
  return `local requests = {}
function init(args)
  for line in io.lines(${JSON.stringify(requestsFile)}) do
    local fields = {}
    for field in (line .. "\t"):gmatch("([^\t]*)\t") do fields[#fields + 1] = field end
    local headers = { ["Authorization"] = fields[2] }
    for i = 3, #fields - 1, 2 do headers[fields[i]] = fields[i + 1] end
    requests[#requests + 1] = { fields[1], headers }
  end
  math.randomseed(os.time() + os.clock() * 1000000)
end
function request()
  local r = requests[math.random(#requests)]
  return wrk.format("GET", r[1], r[2])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"durationUs":%d,"errors":%d,"p50Us":%d,"p99Us":%d,"meanUs":%f}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end
`;
}

/** Runs wrk against `origin` (`http://127.0.0.1:port`) for `seconds`. */
export async function wrk(
  origin: string,
  requests: readonly WrkRequest[],
  seconds: number,
  connections = 10,
): Promise<WrkResult> {
  if (requests.length === 0) throw new Error('wrk needs at least one request to send');
  const dir = mkdtempSync(join(tmpdir(), 'wrk-'));
  const script = join(dir, 'requests.lua');
  const requestsFile = join(dir, 'requests.tsv');
  const line = (r: WrkRequest): string =>
    [r.path, `Bearer ${r.key}`, ...Object.entries(r.headers ?? {}).flat()].join('\t');
  writeFileSync(requestsFile, requests.map((r) => `${line(r)}\n`).join(''));
  writeFileSync(script, luaScript(requestsFile));
  try {
    const output = await new Promise<string>((resolve, reject) => {
      // the shell reports its own /proc stat after waiting for wrk: cutime and cstime are wrk's
      const child = spawn(
        'sh',
        [
          '-c',
          'wrk "$@"; code=$?; cat /proc/$$/stat; exit $code',
          'sh',
          '-t1',
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
    };
    const stat = output.trim().split('\n').at(-1) ?? '';
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds_ = figures.durationUs / 1e6;
    return {
      requests: figures.requests,
      seconds: seconds_,
      rps: Math.round(figures.requests / seconds_),
      p50Ms: figures.p50Us / 1000,
      p99Ms: figures.p99Us / 1000,
      meanMs: figures.meanUs / 1000,
      errors: figures.errors,
      wrkCpuMs: (Number(fields[13]) + Number(fields[14])) * 10,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
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

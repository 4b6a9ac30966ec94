/**
 * How a process's threads share a load, from outside and without its cooperation:
 * - the CPU time of each thread (/proc/<pid>/task/<tid>/stat), by thread name;
 * - which event loop holds each of its TCP connections on a port: each libuv loop has an epoll
 *   instance, whose /proc/<pid>/fdinfo lists the descriptors it watches (`tfd:`); `ss -ti` gives each
 *   connection's descriptor and the data segments it received (`data_segs_in`: one per request on
 *   a keep-alive connection whose requests each fit in a segment and are not pipelined).
 * Connections are sampled while the load runs (they close with it), so the last sample of each
 * connection stands for its requests: up to one sampling interval short of the end.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** CPU ticks (user + system) of each thread of `pid` now, by thread id, with its name. */
export function threadTicks(pid: number): Map<number, { name: string; ticks: number }> {
  const threads = new Map<number, { name: string; ticks: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      threads.set(Number(tid), { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // the thread ended
    }
  }
  return threads;
}

/**
 * The CPU ms of each thread between two samples, the busiest first; threads at or under `minShare`
 * of the total (1 % by default; 0 keeps every thread that ran) left out.
 */
export function threadCpuMs(
  before: ReadonlyMap<number, { name: string; ticks: number }>,
  after: ReadonlyMap<number, { name: string; ticks: number }>,
  minShare = 0.01,
): { tid: number; name: string; cpuMs: number }[] {
  const all = [...after].map(([tid, t]) => ({
    tid,
    name: t.name,
    cpuMs: (t.ticks - (before.get(tid)?.ticks ?? 0)) * 10,
  }));
  const total = all.reduce((sum, t) => sum + t.cpuMs, 0);
  return all.filter((t) => t.cpuMs > total * minShare).sort((a, b) => b.cpuMs - a.cpuMs);
}

/** Each epoll instance of `pid` (by its descriptor) and the descriptors it watches. */
function epollTargets(pid: number): Map<number, number> {
  const loopOf = new Map<number, number>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let link = '';
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (link !== 'anon_inode:[eventpoll]') continue;
    try {
      for (const match of readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8').matchAll(/^tfd:\s+(\d+)/gm))
        loopOf.set(Number(match[1]), Number(fd));
    } catch {
      // closed meanwhile
    }
  }
  return loopOf;
}

/** The established connections to `port` owned by `pid`: the client's port, the descriptor, data segments in. */
function connections(pid: number, port: number): { client: string; fd: number; segments: number }[] {
  const out = execFileSync('ss', ['-tinpH', 'state', 'established', 'sport', '=', `:${port}`], {
    encoding: 'utf8',
  });
  const found: { client: string; fd: number; segments: number }[] = [];
  const lines = out.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    const fd = new RegExp(`pid=${pid},fd=(\\d+)`).exec(line)?.[1];
    if (fd === undefined) continue;
    const client = line.trim().split(/\s+/)[3] ?? '';
    const segments = /data_segs_in:(\d+)/.exec(lines[i + 1] ?? '')?.[1] ?? '0';
    found.push({ client, fd: Number(fd), segments: Number(segments) });
  }
  return found;
}

export interface LoopShare {
  /** the epoll instance's descriptor in the process: one per event loop */
  loop: number;
  connections: number;
  /** data segments received on its connections: their requests */
  requests: number;
}

/**
 * Samples the connections of `pid` on `port` every `intervalMs` until the returned function is
 * called, which gives the connections and requests of each event loop; connections that received
 * nothing meanwhile are left out.
 */
export function sampleLoopShares(pid: number, port: number, intervalMs = 250): () => LoopShare[] {
  // connections open before the load (another client's keep-alive) count from what they held then
  const before = new Map<string, number>();
  try {
    for (const c of connections(pid, port)) before.set(c.client, c.segments);
  } catch {
    // none to count from
  }
  const last = new Map<string, { loop: number; segments: number }>();
  const sample = (): void => {
    try {
      const loops = epollTargets(pid);
      for (const c of connections(pid, port))
        last.set(c.client, { loop: loops.get(c.fd) ?? -1, segments: c.segments });
    } catch {
      // the process or ss is gone: keep what was seen
    }
  };
  const timer = setInterval(sample, intervalMs);
  return () => {
    clearInterval(timer);
    const byLoop = new Map<number, LoopShare>();
    for (const [client, c] of last) {
      const segments = c.segments - (before.get(client) ?? 0);
      if (segments === 0) continue;
      const share = byLoop.get(c.loop) ?? { loop: c.loop, connections: 0, requests: 0 };
      share.connections += 1;
      share.requests += segments;
      byLoop.set(c.loop, share);
    }
    return [...byLoop.values()].sort((a, b) => b.requests - a.requests);
  };
}

/**
 * What a side of the comparison costs the machine, read from /proc: the CPU time and memory of whole
 * process trees (the peer's Node process and every PostgreSQL process; the service's one process).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times (USER_HZ). */
const ticksPerSecond = 100;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime, in ticks: the process's own CPU and that of its reaped children */
  ticks: number;
}

function statOf(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // after the command name, which may hold ") ": fields[0] is field 3 (state) of proc(5)
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      pid,
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return null;
  }
}

/** The processes of the trees under `roots`, roots included, as they are now. */
export function processTree(roots: readonly number[]): ProcStat[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => statOf(Number(name)))
    .filter((stat): stat is ProcStat => stat !== null);
  const children = new Map<number, ProcStat[]>();
  for (const stat of all) children.set(stat.ppid, [...(children.get(stat.ppid) ?? []), stat]);
  const tree: ProcStat[] = [];
  const pending = all.filter((stat) => roots.includes(stat.pid));
  while (pending.length > 0) {
    const next = pending.pop()!;
    tree.push(next);
    pending.push(...(children.get(next.pid) ?? []));
  }
  return tree;
}

/**
 * CPU time (user + system) the trees under `roots` have used so far, in ms: each live process's own
 * and that of the children it has reaped (a PostgreSQL backend that ended is counted in the postmaster).
 */
export function treeCpuMs(roots: readonly number[]): number {
  return (processTree(roots).reduce((sum, p) => sum + p.ticks, 0) * 1000) / ticksPerSecond;
}

/**
 * Bytes the trees under `roots` have read from the disk so far (`read_bytes` of /proc's io): reads
 * the page cache answered are not counted, so a load that reads none found every page in memory.
 */
export function treeDiskReadBytes(roots: readonly number[]): number {
  let bytes = 0;
  for (const p of processTree(roots)) {
    try {
      bytes += Number(/^read_bytes:\s+(\d+)/m.exec(readFileSync(`/proc/${p.pid}/io`, 'utf8'))?.[1] ?? 0);
    } catch {
      // a process that ended between the listing and the read
    }
  }
  return bytes;
}

/** A `Name:   123 kB` field of /proc's status or smaps_rollup text, in kB (0 when absent). */
function fieldKb(text: string, field: string): number {
  return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** A field of a process's /proc status (`Pss`: of its smaps_rollup), in kB; 0 when it cannot be read. */
export function statusKb(pid: number, field: string): number {
  try {
    return fieldKb(
      readFileSync(`/proc/${pid}/${field === 'Pss' ? 'smaps_rollup' : 'status'}`, 'utf8'),
      field,
    );
  } catch {
    return 0;
  }
}

/**
 * Resident memory of the trees now, MB: RSS summed (shared pages counted in each process), its
 * anonymous part (`RssAnon`: heaps, arenas, stacks; not the file pages of a mapped model, which are
 * the page cache's) and PSS (shared pages split; null unless asked).
 */
export function treeMemoryMb(
  roots: readonly number[],
  withPss = true,
): { rss: number; anon: number; pss: number | null } {
  let rss = 0;
  let anon = 0;
  let pss = 0;
  for (const p of processTree(roots)) {
    let status = '';
    try {
      status = readFileSync(`/proc/${p.pid}/status`, 'utf8');
    } catch {
      continue;
    }
    rss += fieldKb(status, 'VmRSS');
    anon += fieldKb(status, 'RssAnon');
    if (withPss) pss += statusKb(p.pid, 'Pss');
  }
  return { rss: rss / 1024, anon: anon / 1024, pss: withPss ? pss / 1024 : null };
}

/**
 * Samples the trees' memory and keeps the peaks until `stop`: RSS every `intervalMs`, PSS every
 * `pssEveryMs`. PSS comes from `smaps_rollup`, which walks every page a process maps: for the
 * peers' PostgreSQL processes, each mapping gigabytes of shared buffers, a sample took 0.2 s of
 * kernel time, so at the RSS's pace it would take most of a core from the loads it measures.
 */
export function memoryPeaks(
  roots: () => readonly number[],
  intervalMs = 250,
  pssEveryMs = 5000,
): { peaks: () => { rss: number; anon: number; pss: number }; stop: () => void } {
  const peak = { rss: 0, anon: 0, pss: 0 };
  let pssAt = 0;
  const sample = (withPss = Date.now() - pssAt >= pssEveryMs): void => {
    if (withPss) pssAt = Date.now();
    const now = treeMemoryMb(roots(), withPss);
    peak.rss = Math.max(peak.rss, now.rss);
    peak.anon = Math.max(peak.anon, now.anon);
    peak.pss = Math.max(peak.pss, now.pss ?? 0);
  };
  sample(true);
  const timer = setInterval(() => sample(), intervalMs);
  return {
    peaks: () => {
      sample(true);
      return { rss: Math.round(peak.rss), anon: Math.round(peak.anon), pss: Math.round(peak.pss) };
    },
    stop: () => clearInterval(timer),
  };
}

export interface MemorySample {
  /** since the timeline started */
  ms: number;
  rssMb: number;
  /** anonymous memory: heaps, malloc arenas, stacks */
  anonMb: number;
  /** file-backed: the node binary, libraries */
  fileMb: number;
  threads: number;
}

/**
 * One process's memory every `intervalMs` until `stop`: RSS with its anonymous and file-backed
 * parts and its thread count (a worker thread shows as threads coming and going), and its peak RSS
 * (the kernel's VmHWM, as last read before it ended).
 */
export function memoryTimeline(
  pid: () => number,
  intervalMs = 200,
): { stop: () => { samples: MemorySample[]; peakRssMb: number } } {
  const from = Date.now();
  const samples: MemorySample[] = [];
  let peakKb = 0;
  const mb = (kb: number): number => Math.round(kb / 102.4) / 10;
  const sample = (): void => {
    const p = pid();
    if (p === 0) return;
    let text: string;
    try {
      text = readFileSync(`/proc/${p}/status`, 'utf8');
    } catch {
      return;
    }
    const kb = (field: string): number => fieldKb(text, field);
    // An ended process not yet reaped has no memory lines: not a sample.
    if (!/^VmRSS:/m.test(text)) return;
    peakKb = Math.max(peakKb, kb('VmHWM'));
    samples.push({
      ms: Date.now() - from,
      rssMb: mb(kb('VmRSS')),
      anonMb: mb(kb('RssAnon')),
      fileMb: mb(kb('RssFile')),
      threads: kb('Threads'),
    });
  };
  const timer = setInterval(sample, intervalMs);
  return {
    stop: () => {
      sample();
      clearInterval(timer);
      return { samples, peakRssMb: Math.round(peakKb / 1024) };
    },
  };
}

/** The command line of a process, arguments joined by spaces; empty once it has ended. */
function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** CPU ticks of each process of the trees now, with what it is (`classify` of its command line). */
export function cpuByRole(
  roots: readonly number[],
  classify: (command: string, pid: number) => string,
): Map<number, { role: string; ticks: number }> {
  return new Map(
    processTree(roots).map((p) => [p.pid, { role: classify(commandOf(p.pid), p.pid), ticks: p.ticks }]),
  );
}

/**
 * The CPU time by role between two `cpuByRole` samples, ms. A process that ended between them is
 * lost with its last ticks (its CPU goes to its parent's cutime once reaped: the role of the parent).
 */
export function cpuSplitMs(
  before: ReadonlyMap<number, { role: string; ticks: number }>,
  after: ReadonlyMap<number, { role: string; ticks: number }>,
): Record<string, number> {
  const split: Record<string, number> = {};
  for (const [pid, now] of after) {
    const ticks = now.ticks - (before.get(pid)?.ticks ?? 0);
    split[now.role] = (split[now.role] ?? 0) + (ticks * 1000) / ticksPerSecond;
  }
  return split;
}

/** The machine's load averages, from /proc/loadavg: 1, 5 and 15 minutes. */
export function loadAverages(): [number, number, number] {
  const [one, five, fifteen] = readFileSync('/proc/loadavg', 'utf8').split(' ').map(Number);
  return [one ?? 0, five ?? 0, fifteen ?? 0];
}

export interface LoadSummary {
  samples: number;
  /** the 1-minute load average: its mean, least and most over the samples */
  mean: number;
  min: number;
  max: number;
}

/**
 * Samples the 1-minute load average every `intervalMs` until `stop`; `summary(from)` summarises the
 * samples taken since `from` (Date.now() of a mark), or all of them.
 */
export function loadSampler(intervalMs = 1000): {
  summary: (from?: number) => LoadSummary;
  stop: () => void;
} {
  const samples: { at: number; load: number }[] = [];
  const sample = (): void => {
    samples.push({ at: Date.now(), load: loadAverages()[0] });
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    summary: (from = 0) => {
      sample();
      const loads = samples.filter((s) => s.at >= from).map((s) => s.load);
      const round = (n: number): number => Math.round(n * 100) / 100;
      return {
        samples: loads.length,
        mean: round(loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length)),
        min: round(Math.min(...loads)),
        max: round(Math.max(...loads)),
      };
    },
    stop: () => clearInterval(timer),
  };
}

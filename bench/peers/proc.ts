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

function statusKb(pid: number, field: string): number {
  try {
    const text = readFileSync(`/proc/${pid}/${field === 'Pss' ? 'smaps_rollup' : 'status'}`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Resident memory of the trees now, MB: RSS summed (shared pages counted in each process) and PSS (shared pages split). */
export function treeMemoryMb(roots: readonly number[]): { rss: number; pss: number } {
  let rss = 0;
  let pss = 0;
  for (const p of processTree(roots)) {
    rss += statusKb(p.pid, 'VmRSS');
    pss += statusKb(p.pid, 'Pss');
  }
  return { rss: rss / 1024, pss: pss / 1024 };
}

/** Samples the trees' memory every `intervalMs` and keeps the peaks until `stop`. */
export function memoryPeaks(
  roots: () => readonly number[],
  intervalMs = 250,
): { peaks: () => { rss: number; pss: number }; stop: () => void } {
  const peak = { rss: 0, pss: 0 };
  const sample = (): void => {
    const now = treeMemoryMb(roots());
    peak.rss = Math.max(peak.rss, now.rss);
    peak.pss = Math.max(peak.pss, now.pss);
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    peaks: () => {
      sample();
      return { rss: Math.round(peak.rss), pss: Math.round(peak.pss) };
    },
    stop: () => clearInterval(timer),
  };
}

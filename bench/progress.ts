/**
 * Progress of a benchmark run on stderr (the figures go to stdout): each phase when it starts and
 * ends, and every 5 s meanwhile what it has done so far.
 */
const clock = (): string => new Date().toISOString().slice(11, 19);

export function note(line: string): void {
  console.error(`[bench ${clock()}] ${line}`);
}

/** Runs `work` as a named phase; `probe` says how far it is (e.g. "1 200 000 of 7 447 362 events"). */
export async function phase<T>(name: string, work: () => Promise<T>, probe?: () => string): Promise<T> {
  const started = Date.now();
  const elapsed = (): string => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  note(`${name}: started`);
  const ticker = setInterval(() => {
    let detail = '';
    try {
      detail = probe === undefined ? '' : `, ${probe()}`;
    } catch {
      detail = '';
    }
    note(`${name}: ${elapsed()}${detail}`);
  }, 5000);
  try {
    const result = await work();
    note(`${name}: done in ${elapsed()}`);
    return result;
  } finally {
    clearInterval(ticker);
  }
}

/** "n of total events, rate/s" for a counter that grows from `from` while a phase runs. */
export function counterProbe(unit: string, read: () => number, total: number): () => string {
  const started = Date.now();
  const from = read();
  return () => {
    const now = read();
    const rate = Math.round((now - from) / Math.max(0.001, (Date.now() - started) / 1000));
    return `${now} of ${total} ${unit}, ${rate} ${unit}/s`;
  };
}

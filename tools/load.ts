/** A bounded HTTP load on loopback: `concurrency` workers for `durationMs`, each request chosen by `next`. */
export interface LoadReport {
  requests: number;
  statuses: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export async function runLoad(options: {
  durationMs: number;
  concurrency: number;
  next: (i: number) => { url: string; headers?: Record<string, string> };
  /** stop early when this resolves */
  until?: Promise<unknown>;
}): Promise<LoadReport> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const deadline = Date.now() + options.durationMs;
  let stop = false;
  void options.until?.then(() => (stop = true));
  let counter = 0;
  const worker = async (): Promise<void> => {
    while (!stop && Date.now() < deadline) {
      const { url, headers } = options.next(counter++);
      const started = performance.now();
      let status: string;
      try {
        const response = await fetch(url, headers === undefined ? {} : { headers });
        await response.arrayBuffer();
        status = String(response.status);
      } catch {
        status = 'network-error';
      }
      latencies.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) /
    100;
  return { requests: latencies.length, statuses, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

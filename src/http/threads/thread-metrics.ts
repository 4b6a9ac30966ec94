/**
 * The request threads' request metrics for a scrape. A thread that does not answer in time counts
 * with its last answer, and one that has ended with its last answer too, so that no sum ever goes
 * down (a counter that falls is a reset to Prometheus); the requests it answered after that are lost.
 */
import type { Worker } from 'node:worker_threads';
import { AggregatorRegistry } from 'prom-client';
import type { MetricsJson } from '../../request-metrics.js';
import type { FromRequestThread, ToRequestThread } from './messages.js';

/** How long a scrape waits for a thread's metrics. */
const metricsTimeoutMs = 2000;

/** A request thread as a scrape sees it. */
export interface MetricsSource {
  worker: Worker;
  /** its request metrics at the last scrape it answered */
  lastMetrics: MetricsJson | null;
}

export class ThreadMetrics {
  private lastMetricsId = 0;
  /** the last metrics of threads that have ended, kept in the sums */
  private readonly endedMetrics: MetricsJson[] = [];

  /** A thread has ended: its last answer stays in the sums. */
  ended(thread: MetricsSource): void {
    if (thread.lastMetrics !== null) this.endedMetrics.push(thread.lastMetrics);
  }

  /** Asks every thread of `threads` for its metrics; `live` says whether one still runs. */
  async collectAll<T extends MetricsSource>(
    threads: readonly T[],
    live: (thread: T) => boolean,
  ): Promise<MetricsJson[]> {
    const answers = threads.map(
      (thread) =>
        new Promise<MetricsJson | null>((resolve) => {
          const id = ++this.lastMetricsId;
          const timer = setTimeout(() => done(null), metricsTimeoutMs);
          const onMessage = (message: FromRequestThread): void => {
            if (message.type === 'metrics' && message.id === id) done(message.metrics);
          };
          const done = (metrics: MetricsJson | null): void => {
            clearTimeout(timer);
            thread.worker.off('message', onMessage);
            if (metrics !== null) thread.lastMetrics = metrics;
            // a thread that ended meanwhile counts among the ended ones already
            resolve(live(thread) ? thread.lastMetrics : null);
          };
          thread.worker.on('message', onMessage);
          thread.worker.postMessage({ type: 'metrics', id } satisfies ToRequestThread);
        }),
    );
    const running = (await Promise.all(answers)).filter((metrics) => metrics !== null);
    if (this.endedMetrics.length > 1) {
      // folded into one, so that a thread restarted again and again does not grow the list
      const folded = (await AggregatorRegistry.aggregate(
        this.endedMetrics.splice(0),
      ).getMetricsAsJSON()) as MetricsJson;
      this.endedMetrics.unshift(folded);
    }
    return [...this.endedMetrics, ...running];
  }
}

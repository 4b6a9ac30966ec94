/**
 * API request metrics of one request thread. Each thread keeps its own; the admin listener sums
 * those of every thread into one family (`metricsText`).
 */
import {
  AggregatorRegistry,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type MetricObjectWithValues,
  type MetricValue,
} from 'prom-client';

export type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

export class RequestMetrics {
  readonly registry = new Registry();
  readonly httpDuration = new Histogram({
    name: 'orders_read_model_http_request_duration_seconds',
    help: 'API request duration by route and status code, summed over the request threads',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  collect(): Promise<MetricsJson> {
    return this.registry.getMetricsAsJSON();
  }
}

/** The Prometheus text of `process` with the request metrics of every thread summed. */
export async function metricsText(process: Registry, threads: readonly MetricsJson[]): Promise<string> {
  return Registry.merge([process, AggregatorRegistry.aggregate([...threads])]).metrics();
}

/** Gauges of the request threads beside the main thread, collected at each scrape. */
export function requestThreadMetrics(
  registry: Registry,
  threads: { size(): number; readonly restarts: number },
): void {
  new Gauge({
    name: 'orders_read_model_http_threads',
    help: 'Threads answering the API, the main thread included',
    registers: [registry],
    collect() {
      this.set(1 + threads.size());
    },
  });
  let counted = 0;
  new Counter({
    name: 'orders_read_model_http_thread_restarts_total',
    help: 'Request threads started again after one ended unexpectedly',
    registers: [registry],
    collect() {
      this.inc(threads.restarts - counted);
      counted = threads.restarts;
    },
  });
}

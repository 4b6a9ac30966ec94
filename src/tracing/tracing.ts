/**
 * The service's tracing, as the rest of `src/` sees it: a request's span, an applied batch's span,
 * and a flush at shutdown. Nothing here imports OpenTelemetry: `otel.ts` alone does, and it is
 * loaded only when the OTEL_* variables turn tracing on, so that a service nobody asked to trace
 * loads no SDK and pays nothing.
 */
import type { TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { LoadTracing, Tracing } from './spans.js';

/**
 * The tracing the configuration asks for, or null. `load` is the import of the OpenTelemetry
 * implementation; with tracing off it is never called.
 */
export async function startTracing(
  config: TracingConfig | null,
  logger: Logger,
  load: LoadTracing = () => import('./otel.js'),
): Promise<Tracing | null> {
  if (config === null) return null;
  const { createTracing } = await load();
  const tracing = createTracing(config, logger);
  logger.info(
    {
      exporters: config.exporters,
      // the URL without what may be credentials in it (user info, query)
      ...(config.exporters.includes('otlp') ? { endpoint: withoutCredentials(config.otlpTracesUrl) } : {}),
      serviceName: config.resource['service.name'],
      sampler: config.sampler,
    },
    'tracing on',
  );
  return tracing;
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

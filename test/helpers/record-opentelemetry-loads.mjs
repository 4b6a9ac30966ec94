// Preloaded into a service process (NODE_OPTIONS=--import): names on stderr every OpenTelemetry
// module beyond the API package that the process loads, so that a test can show that an untraced
// service loads none of the SDK.
import { writeSync } from 'node:fs';
import { registerHooks } from 'node:module';

registerHooks({
  load(url, context, nextLoad) {
    // The API package is a no-op without an SDK, and prom-client requires it (for exemplars) in
    // every process that collects the default metrics: what tracing adds is everything else.
    if (url.includes('/@opentelemetry/') && !url.includes('/@opentelemetry/api/'))
      writeSync(2, `opentelemetry module loaded: ${url}\n`);
    return nextLoad(url, context);
  },
});

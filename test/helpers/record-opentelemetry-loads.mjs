// Preloaded into a service process (NODE_OPTIONS=--import): names on stderr every OpenTelemetry
// module the process loads, so that a test can show that an untraced service loads none.
import { writeSync } from 'node:fs';
import { registerHooks } from 'node:module';

registerHooks({
  load(url, context, nextLoad) {
    if (url.includes('/@opentelemetry/')) writeSync(2, `opentelemetry module loaded: ${url}\n`);
    return nextLoad(url, context);
  },
});

/** The timers that drive the lifecycle's checks: lag checks, and proposals with the switch they may lead to. */
import type { Logger } from '../logger.js';
import type { ReadModelLifecycle } from './read-model-lifecycle.js';

/** How often `NEXT` is looked at for a proposed model. */
const proposalPollMs = 1000;

/** Starts the lag checks (every `lagCheckIntervalMs`) and the proposal checks; `stop` ends both. */
export function driveLifecycle(
  lifecycle: ReadModelLifecycle,
  options: { lagCheckIntervalMs: number; logger: Logger },
): { stop(): void } {
  const { logger } = options;
  const lagTimer = repeat(options.lagCheckIntervalMs, () =>
    lifecycle.checkLag().catch((error: unknown) => logger.warn({ err: error }, 'lag check failed')),
  );
  const proposalTimer = repeat(proposalPollMs, async () => {
    try {
      lifecycle.checkProposals();
      await lifecycle.maybeSwitch();
    } catch (error) {
      logger.error({ err: error }, 'checking for a proposed model failed');
    }
  });
  return {
    stop: () => {
      lagTimer.stop();
      proposalTimer.stop();
    },
  };
}

/** Runs `task` every `ms`, never two at once; a failing task is logged by the caller and tried again. */
function repeat(ms: number, task: () => Promise<unknown>): { stop(): void } {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    task()
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, ms);
  return { stop: () => clearInterval(timer) };
}

/**
 * How the serving process ends: on SIGTERM or SIGINT it closes the service and exits, 0 once closed,
 * 1 when closing fails or takes longer than the shutdown timeout.
 */
import type { Logger } from './logger.js';

const shutdownTimeoutMs = 15_000;

/**
 * Closes the service `starting` resolves to on the first SIGTERM or SIGINT, then exits. Call it
 * before start-up completes, so that a signal during start-up also ends the process cleanly.
 */
export function exitOnSignals(starting: Promise<{ close(): Promise<void> }>, logger: Logger): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, shutdownTimeoutMs).unref();
    starting
      .then((service) => service.close())
      .then(
        () => {
          logger.info('stopped');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

/**
 * How long a stop waits for the broker to take the goodbye (leaving the group, disconnecting): a
 * broker that is gone or frozen must not hold up a service's shutdown. The model needs no goodbye:
 * its positions are stored with it.
 */
import type { Logger } from '../logger.js';

export const goodbyeTimeoutMs = 2000;

/** `done`, or nothing once `ms` have passed, whichever comes first; a failure of `done` is logged. */
export async function boundedGoodbye(
  done: Promise<void>,
  ms: number,
  logger: Logger,
  what: string,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      logger.warn({ waitedMs: ms }, `${what}: the broker did not answer; going on without it`);
      resolve();
    }, ms);
  });
  try {
    await Promise.race([done.catch((error: unknown) => logger.warn({ err: error }, `${what} failed`)), late]);
  } finally {
    clearTimeout(timer);
  }
}

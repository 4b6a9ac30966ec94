/** Routes kafkajs's own log lines into pino. */
import { logLevel, type logCreator } from './kafkajs-client.js';
import type { Logger } from '../logger.js';

export function kafkaLogCreator(logger: Logger): logCreator {
  const child = logger.child({ library: 'kafkajs' });
  return () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      switch (level) {
        case logLevel.ERROR:
          child.error(extra, message);
          return;
        case logLevel.WARN:
          child.warn(extra, message);
          return;
        case logLevel.INFO:
          child.info(extra, message);
          return;
        case logLevel.DEBUG:
          child.debug(extra, message);
          return;
        case logLevel.NOTHING:
          return;
      }
    };
}

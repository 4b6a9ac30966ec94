import { pino, type Logger } from 'pino';
import { logLevel as kafkaLevel, type logCreator } from 'kafkajs';

export type { Logger };

/** The root logger. Authorization headers never reach a log line. */
/** `destination` is a stream or a file descriptor (2 for stderr); stdout by default. */
export function createLogger(level: string, destination?: pino.DestinationStream | number): Logger {
  return pino(
    {
      level,
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', '*.authorization'],
        censor: '[redacted]',
      },
    },
    typeof destination === 'number' ? pino.destination(destination) : destination,
  );
}

/** Routes kafkajs's own log lines into pino. */
export function kafkaLogCreator(logger: Logger): logCreator {
  const child = logger.child({ component: 'kafkajs' });
  return () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      switch (level) {
        case kafkaLevel.ERROR:
          child.error(extra, message);
          return;
        case kafkaLevel.WARN:
          child.warn(extra, message);
          return;
        case kafkaLevel.INFO:
          child.info(extra, message);
          return;
        case kafkaLevel.DEBUG:
          child.debug(extra, message);
          return;
        case kafkaLevel.NOTHING:
          return;
      }
    };
}

import { pino, type Logger } from 'pino';

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

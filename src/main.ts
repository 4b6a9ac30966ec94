/** Entry point of `npm start`: parse the environment, start the service, stop it cleanly on SIGTERM/SIGINT. */
import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startService, type RunningService } from './service.js';

const shutdownTimeoutMs = 15_000;

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  let service: RunningService | undefined;
  let stopping = false;
  // Registered before start-up so that a signal during start-up also ends the process cleanly.
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, shutdownTimeoutMs).unref();
    (service?.close() ?? Promise.resolve()).then(
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
  try {
    service = await startService(config, logger);
  } catch (error) {
    logger.fatal({ err: error }, 'service failed to start');
    process.exit(1);
  }
}

void main();

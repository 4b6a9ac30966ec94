/**
 * The executable: `npm start` (= `serve`) and the operator's subcommands.
 * The composition root: it reads the environment once, creates the root
 * logger and hands both to the command.
 */
import { ModelFiles, PointerBroken } from './read-model/files.js';
import { hostname, userInfo } from 'node:os';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  createTopics,
  deadLetters,
  issueKey,
  rebuild,
  revokeKey,
  status,
  type CommandContext,
} from './cli/commands.js';
import { skipBatch, skipBatchLines, SkipRefused } from './cli/skip-batch.js';
import { restoreSnapshot, SnapshotRefused, takeSnapshot } from './cli/snapshot.js';
import { ConfigError, loadConfig } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { startService } from './service.js';

const shutdownTimeoutMs = 15_000;

class UsageError extends Error {}

interface Command {
  usage: string;
  summary: string;
  options?: ParseArgsConfig['options'];
  positionals?: number;
  run: (
    ctx: CommandContext,
    values: Record<string, string | boolean | undefined>,
    positionals: string[],
  ) => Promise<void>;
}

function positiveInt(name: string, value: string | boolean | undefined, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

function nonNegativeInt(name: string, value: string | boolean | undefined): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} must be a decimal integer ≥ 0`);
  return n;
}

const commands: Record<string, Command> = {
  serve: {
    usage: 'serve',
    summary: 'consume the topics into the read model and serve the API (what `npm start` runs)',
    run: (ctx) => serve(ctx.config, ctx.logger),
  },
  rebuild: {
    usage: 'rebuild [--no-promote]',
    summary: 'replay every topic from its earliest offset into a new model file, then promote it',
    options: { 'no-promote': { type: 'boolean' } },
    run: (ctx, values) => rebuild(ctx, { promote: values['no-promote'] !== true }),
  },
  'keys issue': {
    usage: 'keys issue --org N [--key-id ID]',
    summary: 'generate an API key for an organization, publish api_key.issued, print the key once',
    options: { org: { type: 'string' }, 'key-id': { type: 'string' } },
    run: async (ctx, values) => {
      const keyId = values['key-id'];
      const org = positiveInt('org', values['org']);
      const issued = await issueKey(ctx, org, typeof keyId === 'string' ? keyId : undefined);
      ctx.print(`Issued key ${issued.keyId} for organization ${org}. The key is shown only this once:`);
      ctx.print(issued.rawKey);
    },
  },
  'keys revoke': {
    usage: 'keys revoke KEY_ID',
    summary: 'publish api_key.revoked for a key id',
    positionals: 1,
    run: (ctx, _values, [keyId]) => {
      if (keyId === undefined || keyId === '') throw new UsageError('KEY_ID is required');
      return revokeKey(ctx, keyId);
    },
  },
  'dead-letters list': {
    usage: 'dead-letters list [--limit N] [--reason REASON]',
    summary: 'print the newest dead letters as JSON lines',
    options: { limit: { type: 'string' }, reason: { type: 'string' } },
    run: (ctx, values) => {
      const reason = values['reason'];
      deadLetters(ctx, 'list', {
        limit: positiveInt('limit', values['limit'], 20),
        ...(typeof reason === 'string' ? { reason } : {}),
      });
      return Promise.resolve();
    },
  },
  'skip-batch': {
    usage: 'skip-batch --topic TOPIC --partition N --from OFFSET --through OFFSET --reason TEXT',
    summary:
      'record that one record batch can never be read (its first and last offsets are in /readyz and the log): every model that meets exactly that batch moves past it, with a dead letter saying what, who and why',
    options: {
      topic: { type: 'string' },
      partition: { type: 'string' },
      from: { type: 'string' },
      through: { type: 'string' },
      reason: { type: 'string' },
    },
    run: (ctx, values) => {
      const { topic, reason } = values;
      if (typeof topic !== 'string' || topic === '') throw new UsageError('--topic is required');
      if (typeof reason !== 'string' || reason.trim() === '')
        throw new UsageError('--reason is required: say why');
      const partition = nonNegativeInt('partition', values['partition']);
      if (values['from'] === undefined) {
        throw new UsageError(
          "--from is required: the batch's first offset, where the partition stopped (/readyz and the log name it with --through)",
        );
      }
      const firstOffset = nonNegativeInt('from', values['from']);
      const lastOffset = nonNegativeInt('through', values['through']);
      const by = `${userInfo().username}@${hostname()}`;
      const report = skipBatch(ctx, { topic, partition, firstOffset, lastOffset, reason, by });
      for (const line of skipBatchLines(report, new ModelFiles(ctx.config.dataDir).skipsPath))
        ctx.print(line);
      return Promise.resolve();
    },
  },
  'dead-letters count': {
    usage: 'dead-letters count',
    summary: 'count dead letters by reason',
    run: (ctx) => {
      deadLetters(ctx, 'count', { limit: 0 });
      return Promise.resolve();
    },
  },
  status: {
    usage: 'status',
    summary: 'offsets, lag (when KAFKA_BROKERS is set), projection version and counts of the live model',
    run: (ctx) => status(ctx),
  },
  snapshot: {
    usage: 'snapshot --to FILE | --restore FILE',
    summary:
      'write a consistent copy of the served model, with its stored positions, while the service runs; or make one the model of a new replica',
    options: { to: { type: 'string' }, restore: { type: 'string' } },
    run: (ctx, values) => {
      const to = values['to'];
      const from = values['restore'];
      if ((typeof to === 'string') === (typeof from === 'string')) {
        throw new UsageError('give exactly one of --to FILE and --restore FILE');
      }
      const facts =
        typeof to === 'string'
          ? takeSnapshot(ctx.config.dataDir, to)
          : restoreSnapshot(ctx.config.dataDir, from as string);
      ctx.print(
        typeof to === 'string'
          ? `Wrote ${facts.file} (${facts.bytes} bytes, projection version ${facts.projectionVersion}, ${facts.positions} messages applied).`
          : `Restored ${facts.file} as the served model (${facts.positions} messages applied): the service continues from its stored positions.`,
      );
      return Promise.resolve();
    },
  },
  'topics create': {
    usage: 'topics create [--partitions N]',
    summary: 'create the four topics that do not exist yet (default 3 partitions)',
    options: { partitions: { type: 'string' } },
    run: (ctx, values) => createTopics(ctx, positiveInt('partitions', values['partitions'], 3)),
  },
};

function overview(): string {
  const width = Math.max(...Object.values(commands).map((c) => c.usage.length));
  return [
    'usage: npm run cli -- <command> [options]   (npm start = serve)',
    '',
    ...Object.values(commands).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'Configuration comes from environment variables (see README, "Configuration"). Every command takes --help.',
  ].join('\n');
}

function findCommand(argv: string[]): { name: string; command: Command; rest: string[] } | null {
  for (const length of [2, 1]) {
    const name = argv.slice(0, length).join(' ');
    const command = commands[name];
    if (command !== undefined) return { name, command, rest: argv.slice(length) };
  }
  return null;
}

async function serve(config: CommandContext['config'], logger: Logger): Promise<void> {
  const starting = startService(config, logger);
  let stopping = false;
  // Registered before start-up completes, so that a signal during start-up also ends the process cleanly.
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
  await starting;
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    console.log(overview());
    return argv.length === 0 ? 2 : 0;
  }
  const found = findCommand(argv);
  if (found === null) {
    console.error(`unknown command: ${argv.join(' ')}\n\n${overview()}`);
    return 2;
  }
  const { command } = found;
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    const parsed = parseArgs({
      args: found.rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    values = parsed.values;
    positionals = parsed.positionals;
    if (values['help'] === true) {
      console.log(`usage: npm run cli -- ${command.usage}\n\n${command.summary}`);
      return 0;
    }
    if (positionals.length !== (command.positionals ?? 0)) {
      throw new UsageError(`expected ${command.positionals ?? 0} argument(s), got ${positionals.length}`);
    }
  } catch (error) {
    console.error(
      `${error instanceof Error ? error.message : String(error)}\nusage: npm run cli -- ${command.usage}`,
    );
    return 2;
  }
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  // Operator commands keep stdout for their answer and log to stderr.
  const logger = createLogger(
    found.name === 'serve' ? config.logLevel : 'warn',
    found.name === 'serve' ? undefined : 2,
  );
  try {
    await command.run({ config, logger, print: (line) => console.log(line) }, values, positionals);
    return found.name === 'serve' ? -1 : 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\nusage: npm run cli -- ${command.usage}`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof SnapshotRefused || error instanceof SkipRefused) {
      console.error(error.message);
      return 2;
    }
    if (error instanceof PointerBroken) {
      // The data directory needs the operator's hand; the message says what to do.
      console.error(`${found.name} failed: ${error.message}`);
      return 1;
    }
    logger.fatal({ err: error }, `${found.name} failed`);
    console.error(`${found.name} failed: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

/**
 * The executable: `npm start` (= `serve`) and the operator's subcommands. The composition root: it
 * reads the environment once, creates the root logger and hands both to the command. The command
 * line is parsed in `cli/arguments.ts`; the serving process ends on signals (`signals.ts`).
 */
import { hostname, userInfo } from 'node:os';
import {
  exitCode,
  failureExit,
  nonNegativeInt,
  parseCommandLine,
  positiveInt,
  UsageError,
  type Command,
} from './cli/arguments.js';
import { deadLetters, issueKey, rebuild, revokeKey, status, type CommandContext } from './cli/commands.js';
import { skipBatch, skipBatchLines } from './cli/skip-batch.js';
import { acceptHistoryLoss, createTopics, retainTopics } from './cli/topics.js';
import { restoreSnapshot, takeSnapshot } from './cli/snapshot.js';
import { ConfigError, formerNamesUsed, loadConfig } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { ModelFiles } from './read-model/files.js';
import { startService } from './service.js';
import { exitOnSignals } from './signals.js';

/** The process goes on after `serve` returns: it ends on a signal. */
const keepRunning = -1;

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
      if (facts.keys !== null)
        ctx.print(
          typeof to === 'string'
            ? `Wrote the keys store's copy ${facts.keys.file} (${facts.keys.positions} messages applied).`
            : `Restored the keys store ${facts.keys.file} (${facts.keys.positions} messages applied).`,
        );
      return Promise.resolve();
    },
  },
  'topics create': {
    usage: 'topics create [--partitions N] [--replication-factor N] [--min-insync-replicas N]',
    summary:
      "create the topics that do not exist yet (default 3 partitions, the broker's replication), keeping every event; say of every topic whether it keeps every event",
    options: {
      partitions: { type: 'string' },
      'replication-factor': { type: 'string' },
      'min-insync-replicas': { type: 'string' },
    },
    run: (ctx, values) => {
      const optional = (name: string): number | undefined =>
        values[name] === undefined ? undefined : positiveInt(name, values[name]);
      const replicas = optional('replication-factor');
      const insync = optional('min-insync-replicas');
      return createTopics(ctx, {
        partitions: positiveInt('partitions', values['partitions'], 3),
        ...(replicas === undefined ? {} : { replicationFactor: replicas }),
        ...(insync === undefined ? {} : { minInsyncReplicas: insync }),
      });
    },
  },
  'topics retain': {
    usage: 'topics retain',
    summary:
      'set every topic to keep every event from now on (retention.ms=-1, retention.bytes=-1, cleanup.policy=delete), keeping its other settings',
    run: (ctx) => retainTopics(ctx),
  },
  'accept-history-loss': {
    usage: 'accept-history-loss --topic TOPIC --partition N --below OFFSET --reason TEXT',
    summary:
      "record that a partition's events below OFFSET are gone from the topic for good: builds may then start from a log that starts at up to OFFSET (/readyz names it)",
    options: {
      topic: { type: 'string' },
      partition: { type: 'string' },
      below: { type: 'string' },
      reason: { type: 'string' },
    },
    run: (ctx, values) => {
      const { topic, reason } = values;
      if (typeof topic !== 'string' || topic === '') throw new UsageError('--topic is required');
      if (typeof reason !== 'string' || reason.trim() === '')
        throw new UsageError('--reason is required: say why the loss is accepted');
      acceptHistoryLoss(ctx, {
        topic,
        partition: nonNegativeInt('partition', values['partition']),
        below: positiveInt('below', values['below']),
        reason,
        by: `${userInfo().username}@${hostname()}`,
      });
      return Promise.resolve();
    },
  },
};

async function serve(config: CommandContext['config'], logger: Logger): Promise<void> {
  const starting = startService(config, logger);
  exitOnSignals(starting, logger);
  await starting;
}

async function main(argv: string[]): Promise<number> {
  const parsed = parseCommandLine(commands, argv);
  if ('exit' in parsed) return parsed.exit;
  const { name, command, values, positionals } = parsed;
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return exitCode.usage;
    }
    throw error;
  }
  // Operator commands keep stdout for their answer and log to stderr.
  const logger = createLogger(name === 'serve' ? config.logLevel : 'warn', name === 'serve' ? undefined : 2);
  for (const { former, now } of formerNamesUsed(process.env))
    logger.warn({ variable: former, renamedTo: now }, `${former} is read as ${now}, its new name: rename it`);
  try {
    await command.run({ config, logger, print: (line) => console.log(line) }, values, positionals);
    return name === 'serve' ? keepRunning : exitCode.ok;
  } catch (error) {
    return failureExit(error, name, command, logger);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error: unknown) => {
    console.error(error);
    process.exit(exitCode.failed);
  },
);

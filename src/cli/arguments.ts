/**
 * The command line: finding the command in the arguments, parsing its options, the usage texts,
 * and the exit code each outcome ends the process with.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError } from '../config.js';
import type { Logger } from '../logger.js';
import { PointerBroken } from '../read-model/files.js';
import { HistoryMissing } from '../kafka/history.js';
import type { CommandContext } from './commands.js';
import { SkipRefused } from './skip-batch.js';
import { SnapshotRefused } from './snapshot.js';

/** 0 done; 1 failed; 2 the operator's call (command, options or configuration) is wrong. */
export const exitCode = { ok: 0, failed: 1, usage: 2 } as const;
export type ExitCode = (typeof exitCode)[keyof typeof exitCode];

export class UsageError extends Error {}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface Command {
  usage: string;
  summary: string;
  options?: ParseArgsConfig['options'];
  positionals?: number;
  run: (ctx: CommandContext, values: OptionValues, positionals: string[]) => Promise<void>;
}

/** A command line parsed: the command with its options, or the exit code when there is nothing to run. */
export type Parsed =
  { name: string; command: Command; values: OptionValues; positionals: string[] } | { exit: ExitCode };

export function positiveInt(name: string, value: string | boolean | undefined, fallback?: number): number {
  if (value === undefined && fallback !== undefined) return fallback;
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

export function nonNegativeInt(name: string, value: string | boolean | undefined): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`--${name} must be a decimal integer ≥ 0`);
  return n;
}

function overview(commands: Record<string, Command>): string {
  const width = Math.max(...Object.values(commands).map((c) => c.usage.length));
  return [
    'usage: npm run cli -- <command> [options]   (npm start = serve)',
    '',
    ...Object.values(commands).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'Configuration comes from environment variables (see README, "Configuration"). Every command takes --help.',
  ].join('\n');
}

function usageLine(command: Command): string {
  return `usage: npm run cli -- ${command.usage}`;
}

function findCommand(
  commands: Record<string, Command>,
  argv: string[],
): { name: string; command: Command; rest: string[] } | null {
  for (const length of [2, 1]) {
    const name = argv.slice(0, length).join(' ');
    const command = commands[name];
    if (command !== undefined) return { name, command, rest: argv.slice(length) };
  }
  return null;
}

/** The command named by `argv` with its options; help and wrong calls are answered here. */
export function parseCommandLine(commands: Record<string, Command>, argv: string[]): Parsed {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    console.log(overview(commands));
    return { exit: argv.length === 0 ? exitCode.usage : exitCode.ok };
  }
  const found = findCommand(commands, argv);
  if (found === null) {
    console.error(`unknown command: ${argv.join(' ')}\n\n${overview(commands)}`);
    return { exit: exitCode.usage };
  }
  const { command } = found;
  try {
    const { values, positionals } = parseArgs({
      args: found.rest,
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    if (values['help'] === true) {
      console.log(`${usageLine(command)}\n\n${command.summary}`);
      return { exit: exitCode.ok };
    }
    if (positionals.length !== (command.positionals ?? 0)) {
      throw new UsageError(`expected ${command.positionals ?? 0} argument(s), got ${positionals.length}`);
    }
    return { name: found.name, command, values, positionals };
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usageLine(command)}`);
    return { exit: exitCode.usage };
  }
}

/** Says why the command failed, on stderr, and gives the exit code for it. */
export function failureExit(error: unknown, name: string, command: Command, logger: Logger): ExitCode {
  if (error instanceof UsageError) {
    console.error(`${error.message}\n${usageLine(command)}`);
    return exitCode.usage;
  }
  if (error instanceof ConfigError || error instanceof SnapshotRefused || error instanceof SkipRefused) {
    console.error(error.message);
    return exitCode.usage;
  }
  if (error instanceof PointerBroken || error instanceof HistoryMissing) {
    // The data directory needs the operator's hand; the message says what to do.
    console.error(`${name} failed: ${error.message}`);
    return exitCode.failed;
  }
  logger.fatal({ err: error }, `${name} failed`);
  console.error(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
  return exitCode.failed;
}

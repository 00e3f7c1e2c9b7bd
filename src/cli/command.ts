import os from 'node:os';
import { cliOperator, type Actor } from '../accounts/audit.ts';
import { loadConfig, CHAIN_NAMES, type ChainName, type Config } from '../internal/config.ts';
import { createLogger, type Logger } from '../internal/logger.ts';
import { NonRetryableError } from '../internal/errors.ts';
import { connectDatabase } from '../store/connect.ts';
import { migrate } from '../store/migrate.ts';
import { createStore, type Store } from '../store/index.ts';

/** Where a command writes; tests pass their own. */
export interface Io {
  env: Record<string, string | undefined>;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Resolves when the operator asks the daemon to stop (SIGINT/SIGTERM); tests resolve it themselves. */
  stopSignal?: Promise<string>;
}

/** A mistake in how the command was called: main.ts prints the message and the command's help, exit code 2. */
export class UsageError extends NonRetryableError {}

/** One option of a command, as `node:util` parseArgs takes it, with the line its help prints. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  description: string;
}

/** One `svc` command: its help and what it runs. `run` resolves to the process exit code. */
export interface Command {
  summary: string;
  usage: string;
  options: Record<string, OptionSpec>;
  run(ctx: { values: Record<string, unknown>; positionals: string[]; io: Io; json: boolean }): Promise<number>;
}

/** The `--json` option every command takes. */
export const jsonOption = { json: { type: 'boolean' as const, description: 'machine-readable JSON output' } };

/** Prints `data` as one JSON line (bigints as decimal text) with --json, else `human`. */
export function emit(io: Io, json: boolean, data: unknown, human: string): void {
  io.out(json ? `${JSON.stringify(data, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))}\n` : `${human}\n`);
}

/**
 * Opens the same database the daemon uses (DATABASE_URL or the embedded cluster, attaching to
 * it when a daemon already runs it), migrated, for one command.
 */
export async function withStore<T>(io: Io, work: (store: Store, ctx: { config: Config; logger: Logger }) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  // Commands print their own results; the logger only speaks up about problems.
  const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel, destination: process.stderr, format: config.logFormat });
  const database = await connectDatabase(config, logger);
  try {
    await migrate({ connectionString: database.connectionString });
    const store = createStore({ connectionString: database.connectionString, max: 2, applicationName: 'svc-cli' });
    try {
      return await work(store, { config, logger });
    } finally {
      await store.close();
    }
  } finally {
    await database.stop();
  }
}

/**
 * The operator running this command, as the audit log names it: the person behind `sudo`
 * (SUDO_USER) when there is one, else the operating-system user (`operator alice (CLI)`).
 */
export function operatorOf(io: Pick<Io, 'env'>): Actor {
  let name = io.env.SUDO_USER;
  if (!name) {
    try {
      name = os.userInfo().username;
    } catch {
      // A container user without a passwd entry: the shell's variables are all there is.
      name = io.env.USER ?? io.env.LOGNAME;
    }
  }
  return cliOperator(name);
}

/** A required, non-empty string option, trimmed. */
export function requireString(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`);
  return value.trim();
}

/** `--wallet CHAIN:ADDRESS`, split; the address is checked later, by the accounts module. */
export function parseWallet(text: string): { chain: ChainName; address: string } {
  const separator = text.indexOf(':');
  const chain = text.slice(0, separator) as ChainName;
  if (separator < 0 || !CHAIN_NAMES.includes(chain)) {
    throw new UsageError(`--wallet ${JSON.stringify(text)} must be CHAIN:ADDRESS with CHAIN one of ${CHAIN_NAMES.join(', ')}`);
  }
  return { chain, address: text.slice(separator + 1) };
}

/** An ISO 8601 time (`2026-11-20T14:00:00Z`, or a date: midnight UTC). */
export function parseTime(name: string, text: string): Date {
  const time = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(time.getTime())) throw new UsageError(`--${name} ${JSON.stringify(text)} must be an ISO 8601 time such as 2026-11-20T14:00:00Z`);
  return time;
}

/** Resolves with the first SIGINT/SIGTERM's name; a second signal while draining exits at once. */
export function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      resolve(signal);
      // A second signal while draining means "now".
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
    };
    process.once('SIGINT', () => onSignal('SIGINT'));
    process.once('SIGTERM', () => onSignal('SIGTERM'));
  });
}

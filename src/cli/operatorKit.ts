import type { Config } from '../internal/config.ts';
import type { Logger } from '../internal/logger.ts';
import type { Store } from '../store/index.ts';
import type { Io } from './main.ts';

/**
 * What the operator commands (`svc ingest …`, `svc webhooks redeliver`) take from main.ts, passed
 * in rather than imported so the command files and main.ts do not import each other.
 */
export interface CliKit {
  /** main.ts's usage error: exit code 2, the message and the command's help. */
  UsageError: new (message: string) => Error;
  /** Opens the daemon's database (DATABASE_URL or the embedded cluster), migrated, for one command. */
  withStore<T>(io: Io, work: (store: Store, ctx: { config: Config; logger: Logger }) => Promise<T>): Promise<T>;
  /** Prints `data` as one JSON line with --json, else `human`. */
  emit(io: Io, json: boolean, data: unknown, human: string): void;
}

/** The shape of a command in main.ts's table. */
export interface OperatorCommand {
  summary: string;
  usage: string;
  options: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; description: string }>;
  run(ctx: { values: Record<string, unknown>; positionals: string[]; io: Io; json: boolean }): Promise<number>;
}

export const jsonOption = { json: { type: 'boolean' as const, description: 'machine-readable JSON output' } };

/** A required, non-empty string option. */
export function required(kit: CliKit, values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new kit.UsageError(`--${name} is required`);
  return value.trim();
}

/** An ISO 8601 time (`2026-11-20T14:00:00Z`, or a date: midnight UTC). */
export function parseTime(kit: CliKit, name: string, text: string): Date {
  const time = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text) ? new Date(text) : new Date(NaN);
  if (Number.isNaN(time.getTime())) throw new kit.UsageError(`--${name} ${JSON.stringify(text)} must be an ISO 8601 time such as 2026-11-20T14:00:00Z`);
  return time;
}

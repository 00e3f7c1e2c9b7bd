import { NonRetryableError, RetryableError } from '../internal/errors.ts';

/**
 * The store's own errors, and the one place that reads what Postgres and `pg` say about a failure
 * (SQLSTATEs, socket error codes, pg's connection messages). Everything above the store decides
 * from these classes and predicates, never from a code or a message.
 */

/** A database wait that ran out (see `DatabaseLimits`): the database is frozen, unreachable or overloaded. */
export class DatabaseTimeoutError extends RetryableError {
  override name = 'DatabaseTimeoutError';
}

/**
 * The COMMIT of a bounded transaction got no answer in time and whether it took effect could not
 * be learned: the change may or may not be in the database. Not retryable as such (a retry
 * without an Idempotency-Key could apply it twice): the HTTP layer says so instead of a 503.
 */
export class CommitOutcomeUnknownError extends NonRetryableError {
  override name = 'CommitOutcomeUnknownError';
}

const sqlState = (error: unknown): string | undefined => (error as { code?: unknown } | undefined)?.code as string | undefined;

/** SQLSTATEs that mean "the same transaction may succeed if run again": serialization failure, deadlock. */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01']);

/** Whether running the whole transaction again may succeed (a serialization failure or a deadlock). */
export function isRetryableTransactionError(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && RETRYABLE_SQLSTATES.has(code);
}

/**
 * Whether a prepared statement failed because a table it reads changed shape since it was
 * prepared on that connection ("cached plan must not change result type": a migration added a
 * column while this process ran). The connection keeps failing that statement: discard it and
 * run the statement again on another.
 */
export function isStalePreparedStatement(error: unknown): boolean {
  return sqlState(error) === '0A000' && /cached plan must not change result type/.test((error as Error).message ?? '');
}

/** Whether a statement failed because a table it names does not exist (42P01: a database not migrated yet). */
export function isUndefinedTable(error: unknown): boolean {
  return sqlState(error) === '42P01';
}

/** Whether a statement failed on a unique constraint (23505): the row it would add exists already. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

/**
 * SQLSTATEs and socket errors that mean "the database cannot be reached right now" (class 08,
 * connection exceptions, is matched by its prefix). 57014 is a statement cancelled by
 * `statement_timeout`, 55P03 a lock wait ended by `lock_timeout` (both set just under the HTTP
 * layer's own limit); 57P01-03 an administrator or crash shutdown; class 53 (insufficient
 * resources: too many connections, disk full, out of memory) is matched by its prefix. 25006 is a
 * write refused by a read-only database: a hot standby (a failover that has not switched the
 * service yet) or `default_transaction_read_only` set by an operator; a retry reaches the primary
 * once it is back.
 */
const UNAVAILABLE_CODES = new Set([
  '55P03',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '57014',
  '25006',
]);

/** pg's own errors for a connection that broke or never came (they carry no code). */
const UNAVAILABLE_MESSAGES = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/;

/**
 * True for errors that say the database is down, refusing connections or not answering in time
 * (not a bug in a query), anywhere in the cause chain or in an AggregateError's errors: the HTTP
 * layer answers those with 503 and Retry-After instead of a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error as { code?: string; message?: string; cause?: unknown; errors?: unknown[] } | undefined, depth = 0; current && depth < 5; depth++) {
    if (current instanceof DatabaseTimeoutError) return true;
    const code = current.code;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08') || code.startsWith('53'))) return true;
    if (UNAVAILABLE_MESSAGES.test(current.message ?? '')) return true;
    if (Array.isArray(current.errors) && current.errors.some(isDatabaseUnavailable)) return true;
    current = current.cause as typeof current;
  }
  return false;
}

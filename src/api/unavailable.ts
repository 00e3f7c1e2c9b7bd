/**
 * SQLSTATE classes and socket errors that mean "the database cannot be reached right now", and
 * `SVC_DB_TIMEOUT`: a bounded wait of the store ran out (a frozen or partitioned database never
 * refuses anything, it just never answers). 57014 is a statement cancelled by `statement_timeout`,
 * 55P03 a lock wait ended by `lock_timeout` (both set just under the HTTP layer's own limit).
 */
const UNAVAILABLE_CODES = new Set(['SVC_DB_TIMEOUT', '55P03', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '57014', '53300']);

/**
 * True for errors that say the database is down, refusing connections or not answering in time
 * (not a bug in a query): the HTTP layer answers those with 503 and Retry-After instead of a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error as { code?: string; message?: string; cause?: unknown; errors?: unknown[] } | undefined, depth = 0; current && depth < 5; depth++) {
    const code = current.code;
    if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
    if (/Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error/.test(current.message ?? '')) return true;
    if (Array.isArray(current.errors) && current.errors.some(isDatabaseUnavailable)) return true;
    current = current.cause as typeof current;
  }
  return false;
}

/** Seconds a client should wait before retrying while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

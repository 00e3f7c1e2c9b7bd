/** SQLSTATE classes and socket errors that mean "the database cannot be reached right now". */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH', '57P01', '57P02', '57P03', '53300']);

/**
 * True for errors that say the database is down or refusing connections (not a bug in a query):
 * the HTTP layer answers those with 503 and Retry-After instead of a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error as { code?: string; message?: string; cause?: unknown; errors?: unknown[] } | undefined, depth = 0; current && depth < 5; depth++) {
    const code = current.code;
    if (code && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
    if (/Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(current.message ?? '')) return true;
    if (Array.isArray(current.errors) && current.errors.some(isDatabaseUnavailable)) return true;
    current = current.cause as typeof current;
  }
  return false;
}

/** Seconds a client should wait before retrying while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

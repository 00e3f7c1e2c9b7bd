/**
 * When to try a failed delivery again: the Standard Webhooks (Svix) schedule, extended to a
 * little over three days. Index `i` is the wait before attempt `i + 2` (attempt 1 is immediate),
 * so a delivery gets 10 attempts in all and its last one lands about 80 hours after the first.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  14 * 3_600_000,
  20 * 3_600_000,
  24 * 3_600_000,
];

/** Attempts per delivery: the immediate one plus one per entry of RETRY_DELAYS_MS. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/**
 * ±10 % of each delay, so endpoints that failed together (an outage) are not all retried in the
 * same second when they come back.
 */
const JITTER_RATIO = 0.1;

/** A receiver's Retry-After is obeyed up to the schedule's longest wait, never longer. */
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * The wait after failed attempt number `attempt` (1-based), or `undefined` when it was the last.
 * A `retryAfterMs` from a 429/503 replaces the scheduled wait (capped at MAX_RETRY_AFTER_MS).
 * @param random a number in [0, 1), injectable so tests can pin the jitter.
 */
export function retryDelayMs(attempt: number, params: { random?: () => number; retryAfterMs?: number } = {}): number | undefined {
  if (attempt >= MAX_ATTEMPTS) return undefined;
  if (params.retryAfterMs !== undefined) return Math.min(Math.max(params.retryAfterMs, 0), MAX_RETRY_AFTER_MS);
  const base = RETRY_DELAYS_MS[attempt - 1]!;
  const random = params.random ?? Math.random;
  return Math.round(base * (1 - JITTER_RATIO + 2 * JITTER_RATIO * random()));
}

/**
 * Reads a Retry-After header (RFC 9110: delay-seconds or an HTTP date) into milliseconds from
 * `now`; `undefined` when absent or unreadable.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: Date): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now.getTime());
}

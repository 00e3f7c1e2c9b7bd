import type { Logger } from './logger.ts';

/** Exponential backoff: waits that start at `initialMs` and double per consecutive failure up to `maxMs`. */
export interface BackoffRule {
  initialMs: number;
  maxMs: number;
}

/** The wait after the `failures`-th consecutive failure (1 for the first): `initialMs` doubled `failures - 1` times, at most `maxMs`. */
export function backoffDelay(failures: number, rule: BackoffRule): number {
  return Math.min(rule.maxMs, rule.initialMs * 2 ** (Math.max(1, failures) - 1));
}

/** Consecutive failures of one thing and the wait each asks for (see {@link backoffDelay}). */
export interface Backoff {
  /** Records a failure; returns how long to wait before the next attempt. */
  failed(): number;
  /** Records a success: the next failure waits `initialMs` again. */
  succeeded(): void;
  /** Failures since the last success. */
  readonly failures: number;
}

/** Creates a {@link Backoff} under `rule`, with no failures yet. */
export function createBackoff(rule: BackoffRule): Backoff {
  let failures = 0;
  return {
    failed: () => backoffDelay(++failures, rule),
    succeeded() {
      failures = 0;
    },
    get failures() {
      return failures;
    },
  };
}

/**
 * How a background loop (sandbox tick, webhook delivery, the engine's periodic pass) lives through
 * a failing dependency, the database mostly: waits that double from `initialMs` up to `maxMs`, an
 * error line when the failures start, again when the error changes (a second problem must not
 * hide behind the first) and at least every `remindMs` while they last, and one info line with
 * their count when they end; not a line per attempt (a 250 ms loop would log four errors a
 * second for the whole outage).
 */
export interface FailureBackoff {
  /** Records a failed attempt; returns how long to wait before the next one. */
  failed(error: unknown): number;
  /** Records a successful attempt: after failures, logs the recovery once. */
  succeeded(): void;
}

/** A failure that lasts is logged again this often (with the count so far), so it cannot go quiet. */
const REMIND_MS = 5 * 60_000;

const kindOf = (error: unknown) => {
  const { name, code, message } = (error ?? {}) as { name?: string; code?: string; message?: string };
  return `${name ?? ''}|${code ?? ''}|${message ?? String(error)}`;
};

/** Creates the {@link FailureBackoff} of one loop; `what` names it in the log lines. */
export function createFailureBackoff(params: { logger: Logger; what: string; initialMs: number; maxMs: number; remindMs?: number }): FailureBackoff {
  const remindMs = params.remindMs ?? REMIND_MS;
  const backoff = createBackoff(params);
  let since = 0;
  let lastKind = '';
  let loggedAt = 0;
  return {
    failed(error) {
      const now = Date.now();
      const kind = kindOf(error);
      const failures = backoff.failures;
      if (failures === 0) {
        since = now;
        params.logger.error({ msg: `${params.what} failed; retrying with backoff, logging again on recovery`, err: error, retry_in_ms: params.initialMs });
        loggedAt = now;
      } else if (kind !== lastKind || now - loggedAt >= remindMs) {
        params.logger.error({
          msg: `${params.what} still failing`,
          err: error,
          failed_attempts: failures,
          failing_for_ms: now - since,
          changed: kind !== lastKind,
        });
        loggedAt = now;
      }
      lastKind = kind;
      return backoff.failed();
    },
    succeeded() {
      if (backoff.failures === 0) return;
      params.logger.info({ msg: `${params.what} recovered`, failed_attempts: backoff.failures, outage_ms: Date.now() - since });
      backoff.succeeded();
      lastKind = '';
    },
  };
}

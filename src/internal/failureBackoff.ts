import type { Logger } from './logger.ts';

/**
 * How a background loop (sandbox tick, webhook delivery, the engine's periodic pass) lives through
 * a failing dependency, the database mostly: waits that double from `initialMs` up to `maxMs`, one
 * error line when the failures start and one info line with their count when they end, instead
 * of a line per attempt (a 250 ms loop would log four errors a second for the whole outage).
 */
export interface FailureBackoff {
  /** Records a failed attempt; returns how long to wait before the next one. */
  failed(error: unknown): number;
  /** Records a successful attempt: after failures, logs the recovery once. */
  succeeded(): void;
}

export function createFailureBackoff(params: { logger: Logger; what: string; initialMs: number; maxMs: number }): FailureBackoff {
  let failures = 0;
  let since = 0;
  let delay = params.initialMs;
  return {
    failed(error) {
      if (failures === 0) {
        since = Date.now();
        params.logger.error({ msg: `${params.what} failed; retrying with backoff, logging again on recovery`, err: error, retry_in_ms: params.initialMs });
      }
      failures += 1;
      delay = failures === 1 ? params.initialMs : Math.min(params.maxMs, delay * 2);
      return delay;
    },
    succeeded() {
      if (failures === 0) return;
      params.logger.info({ msg: `${params.what} recovered`, failed_attempts: failures, outage_ms: Date.now() - since });
      failures = 0;
    },
  };
}

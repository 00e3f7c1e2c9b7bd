import type { BackoffRule } from '../../internal/failureBackoff.ts';

/** The EVM ingester's tuned constants, each with the reason for its value (ingester.ts uses them). */

/**
 * Ranges fetched at once while catching up. Four keeps a 2-core host and one provider busy
 * without tripping free-tier rate limits; the adaptive rate handles the rest.
 */
export const DEFAULT_CONCURRENCY = 4;
/**
 * `safe` and `finalized` are read at most this often: they move in steps of seconds (L2 batches,
 * BSC vote rounds, polygon milestones), so reading them on every 250 ms arbitrum block would only
 * add requests. A stale `finalized` only keeps a few more headers stored.
 */
export const TAG_REFRESH_MS = 2_000;
/**
 * Range commits running at once while catching up: one writing its rows while the one before it
 * commits. More would only queue behind the checkpoint, and each holds a connection.
 */
export const COMMITS_IN_FLIGHT = 2;
/** Poll at the block time, but not faster than 4 Hz nor slower than every 5 s. */
export const pollInterval = (blockTimeMs: number) => Math.min(5_000, Math.max(250, blockTimeMs));
/** Back-off after a failed cycle: 1 s doubling to 30 s (pg-boss's worker uses the same shape). */
export const ERROR_BACKOFF: BackoffRule = { initialMs: 1_000, maxMs: 30_000 };

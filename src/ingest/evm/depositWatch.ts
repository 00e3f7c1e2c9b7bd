import type { Sql } from '../../store/index.ts';
import type { ChainName } from '../../internal/config.ts';

/**
 * The deposit addresses one chain's ingester watches (issue 25, docs/ingest-evm.md#deposit-addresses):
 * those of live `address` mode sessions whose monitoring window is open, so a payment at any time
 * from creation to the window's end is stored. Held in memory as a Map (lower-case address ->
 * canonical address and window end): 100,000 addresses are about 25 MB and a lookup per log.
 *
 * Why not an RPC filter per address: providers cap OR-lists of topics (500 to 1,000), so 100,000
 * addresses would be 100+ `eth_getLogs` per range. Instead, above a few hundred watched addresses
 * the ingester asks for every Transfer log of the configured tokens (one request per range, the
 * token contracts as the filter) and keeps those whose recipient is in this set
 * (transfers.ts `parseTransfers`); the cost then follows the chain's token traffic, not the number
 * of open sessions (bench/depositsIngest.ts measures it).
 */
export interface WatchedDeposits {
  /** The canonical address for a lower-case one, or undefined when not watched. */
  canonical(lower: string): string | undefined;
  readonly size: number;
  /** Bumped whenever the set changes (callers cache topic lists by it). */
  readonly version: number;
  /** Every watched address, lower case. */
  lowerAddresses(): IterableIterator<string>;
  /**
   * Reads sessions created since the last call (every open one on the first), and, with `prune`,
   * drops addresses whose window ended more than {@link PRUNE_MARGIN_MS} ago. The ingester prunes
   * only when caught up with the head: while it backfills, old blocks may still pay a session whose
   * window has ended by now, so the set only grows then.
   */
  refresh(sql: Sql, options?: { prune?: boolean }): Promise<{ added: number; removed: number }>;
}

/**
 * A session row's `created_at` is its transaction's start time, so a row can commit after a later
 * refresh read past that time. Re-reading this much catches such rows; a session's INSERT
 * transaction is a few milliseconds. Small, because at 100 creations a second every refresh (once
 * per ingest cycle) re-reads this many seconds of them.
 */
const REFRESH_OVERLAP_MS = 60_000;
/**
 * An address stays watched this long after its window ends: blocks the ingester processes are at
 * most this far behind the clock when it is caught up, and the engine's own window check (from the
 * block's time) is the real rule, so the ingester only has to store a superset.
 */
export const PRUNE_MARGIN_MS = 10 * 60_000;
/** Pruning walks the whole set: at most once a minute. */
const PRUNE_EVERY_MS = 60_000;
/**
 * The first read after a restart takes sessions whose window ended up to this long before the
 * checkpoint last moved (the ingester then backfills the blocks it missed, which may pay them).
 */
const FIRST_READ_FLOOR = `least(now(), coalesce((SELECT updated_at FROM chain_heads WHERE livemode AND chain = $1), now())) - make_interval(secs => $2)`;

/** Creates the (initially empty) deposit set of one chain; the first `refresh` reads every open one. */
export function createWatchedDeposits(params: {
  chain: ChainName /** Tests only: {@link PRUNE_MARGIN_MS} otherwise. */;
  pruneMarginMs?: number;
}): WatchedDeposits {
  const margin = params.pruneMarginMs ?? PRUNE_MARGIN_MS;
  const byLower = new Map<string, { canonical: string; until: number }>();
  let since: Date | undefined;
  let version = 0;
  let prunedAt = 0;
  return {
    canonical: (lower) => byLower.get(lower)?.canonical,
    get size() {
      return byLower.size;
    },
    get version() {
      return version;
    },
    lowerAddresses: () => byLower.keys(),
    async refresh(sql, options = {}) {
      // The first read's start on the database's clock: later refreshes read from there (less the
      // overlap), not from the newest row, which may be days old or absent.
      const started = since ? undefined : (await sql.query<{ now: Date }>('SELECT now() AS now')).rows[0]!.now;
      const { rows } = await sql.query<{ address: string; created_at: Date; monitor_until: Date }>(
        since
          ? `SELECT deposit_address AS address, created_at, monitor_until FROM payment_sessions
              WHERE livemode AND chain = $1 AND deposit_address IS NOT NULL AND created_at > $2
                AND monitor_until > now() - make_interval(secs => $3)`
          : `SELECT deposit_address AS address, created_at, monitor_until FROM payment_sessions
              WHERE livemode AND chain = $1 AND deposit_address IS NOT NULL AND monitor_until > ${FIRST_READ_FLOOR}`,
        since ? [params.chain, new Date(since.getTime() - REFRESH_OVERLAP_MS), margin / 1000] : [params.chain, margin / 1000],
      );
      let added = 0;
      for (const row of rows) {
        const lower = row.address.toLowerCase();
        if (!byLower.has(lower)) {
          byLower.set(lower, { canonical: row.address, until: row.monitor_until.getTime() });
          added += 1;
        }
        if (!since || row.created_at > since) since = row.created_at;
      }
      if (started && (!since || started > since)) since = started;
      let removed = 0;
      const now = Date.now();
      if (options.prune && now - prunedAt >= PRUNE_EVERY_MS) {
        prunedAt = now;
        for (const [lower, entry] of byLower) {
          if (entry.until < now - margin) {
            byLower.delete(lower);
            removed += 1;
          }
        }
      }
      if (added > 0 || removed > 0) version += 1;
      return { added, removed };
    },
  };
}

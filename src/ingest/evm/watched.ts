import { pad } from 'viem';
import type { Sql } from '../../store/index.ts';
import type { ChainName } from '../../internal/config.ts';
import { bloomBits, type BloomBits } from './bloom.ts';
import { createWatchedDeposits } from './depositWatch.ts';

/**
 * The receiving wallets of one chain (any merchant) and the deposit addresses of its open
 * `address` mode sessions (depositWatch.ts), as the ingester filters logs by them.
 * `refresh` reads wallets and sessions added since the last call; the ingester calls it at the
 * start of every cycle, after reading the head, so an address added while it runs is watched from
 * the first block mined after its creation, without a restart.
 */
export interface WatchedWallets {
  /** The canonical (EIP-55) address for a lower-case one, or undefined when not watched. */
  canonical(lower: string): string | undefined;
  readonly size: number;
  /** Recipient topics (32-byte, zero-padded) for an `eth_getLogs` topic filter. */
  topics(): `0x${string}`[];
  /** Bloom bit positions of every wallet, or undefined above `bloomLimit` wallets. */
  bloom(): readonly BloomBits[] | undefined;
  /**
   * Reads new wallets and deposit addresses; returns how many were added. `prune` (only when the
   * ingester is caught up) lets deposit addresses whose window ended leave the set.
   */
  refresh(sql: Sql, options?: { prune?: boolean }): Promise<number>;
  /** How many deposit addresses are watched (a gauge). */
  readonly deposits: number;
}

/**
 * A wallet row's `created_at` is its transaction's start time, so a row can commit after a later
 * refresh already read past that time. Re-reading this much overlap catches such rows; an
 * insert transaction open longer than this is not something the API does.
 */
const REFRESH_OVERLAP_MS = 5 * 60_000;

/** Above this many wallets the per-block bloom test costs more than the `eth_getLogs` it saves. */
const BLOOM_RECIPIENT_LIMIT = 2_000;

/** Creates the (initially empty) watched set of one chain; the first `refresh` reads every wallet. */
export function createWatchedWallets(params: { chain: ChainName; pruneMarginMs?: number }): WatchedWallets {
  const byLower = new Map<string, string>();
  const deposits = createWatchedDeposits(params);
  let topicCache: `0x${string}`[] | undefined;
  let bloomCache: BloomBits[] | undefined;
  let since: Date | undefined;
  return {
    canonical: (lower) => byLower.get(lower) ?? deposits.canonical(lower),
    get size() {
      return byLower.size + deposits.size;
    },
    get deposits() {
      return deposits.size;
    },
    topics() {
      // Only small sets go into a topic filter (transfers.ts); a large one is read for the rare
      // slice-by-slice fallback of one huge block.
      topicCache ??= [...byLower.keys(), ...deposits.lowerAddresses()].map((lower) => pad(lower as `0x${string}`, { size: 32 }));
      return topicCache;
    },
    bloom() {
      if (this.size > BLOOM_RECIPIENT_LIMIT) return undefined;
      // Blooms hold the log address and each 32-byte topic: a recipient is there as its padded topic.
      bloomCache ??= this.topics().map((topic) => bloomBits(topic));
      return bloomCache;
    },
    async refresh(sql, options = {}) {
      const { rows } = await sql.query<{ address: string; created_at: Date }>(
        since ? 'SELECT address, created_at FROM wallets WHERE chain = $1 AND created_at > $2' : 'SELECT address, created_at FROM wallets WHERE chain = $1',
        since ? [params.chain, new Date(since.getTime() - REFRESH_OVERLAP_MS)] : [params.chain],
      );
      let added = 0;
      for (const row of rows) {
        const lower = row.address.toLowerCase();
        if (!byLower.has(lower)) {
          byLower.set(lower, row.address);
          added += 1;
        }
        if (!since || row.created_at > since) since = row.created_at;
      }
      since ??= new Date(0);
      const changed = await deposits.refresh(sql, options);
      if (added > 0 || changed.added > 0 || changed.removed > 0) {
        topicCache = undefined;
        bloomCache = undefined;
      }
      return added + changed.added;
    },
  };
}

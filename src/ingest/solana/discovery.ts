import type { Logger } from '../../internal/logger.ts';
import { createBackoff, type BackoffRule } from '../../internal/failureBackoff.ts';
import type { Store } from '../../store/index.ts';
import { associatedTokenAccounts, loadWatchedOwners, ownedTokenAccounts, saveTokenAccounts, type WatchedMint } from './accounts.ts';
import type { SolanaRpcPool } from './rpc.ts';

/** New wallets are picked up this often, and their non-associated token accounts rediscovered. */
export const DISCOVER_INTERVAL_MS = 60_000;
/** After a failed getTokenAccountsByOwner, discovery alone waits 5 s, doubling to 10 minutes, while ingestion goes on. */
const DISCOVER_BACKOFF: BackoffRule = { initialMs: 5_000, maxMs: 600_000 };

/** Finds the token accounts the Solana ingester watches (see {@link createDiscovery}). */
export interface Discovery {
  /** One discovery step of a pass at `confirmedSlot`; new accounts are read back `backfillSlots` from it. */
  run(confirmedSlot: bigint, signal: AbortSignal): Promise<void>;
}

/**
 * Watches new wallets' associated token accounts at once (derived: no RPC), then lists their
 * other token accounts, and everyone's every `discoverMs`. A failing getTokenAccountsByOwner
 * (some providers disable or throttle it) is logged once per failure streak, counted in
 * rpc_errors_total by the pool, and retried on its own back-off: it never fails the pass.
 */
export function createDiscovery(params: {
  store: Store;
  rpc: SolanaRpcPool;
  mints: WatchedMint[];
  backfillSlots: number;
  discoverMs: number;
  logger: Logger;
}): Discovery {
  const { store, rpc, mints, logger: log } = params;
  /** Owners whose associated token accounts are saved (derived, no RPC). */
  const derivedOwners = new Set<string>();
  /** Owners whose other token accounts were listed (getTokenAccountsByOwner) at least once. */
  const knownOwners = new Set<string>();
  let lastDiscovery = 0;
  /** Discovery's own back-off: a failing getTokenAccountsByOwner must not stop ingestion. */
  const failures = createBackoff(DISCOVER_BACKOFF);
  let retryAt = 0;

  return {
    async run(confirmedSlot, signal) {
      const owners = await loadWatchedOwners(store);
      const floorSlot = confirmedSlot - BigInt(params.backfillSlots);
      const floor = floorSlot > 0n ? floorSlot : 0n;
      let added = 0;
      const fresh = owners.filter((owner) => !derivedOwners.has(owner));
      if (fresh.length > 0) {
        const derived = (await Promise.all(fresh.map((owner) => associatedTokenAccounts(owner, mints)))).flat();
        added += await saveTokenAccounts(store, derived, floor);
        for (const owner of fresh) derivedOwners.add(owner);
      }
      const due = Date.now() - lastDiscovery >= params.discoverMs;
      const targets = due ? owners : owners.filter((owner) => !knownOwners.has(owner));
      if (targets.length > 0 && Date.now() >= retryAt) {
        let failed = false;
        for (const owner of targets) {
          try {
            added += await saveTokenAccounts(store, await ownedTokenAccounts(rpc, owner, mints), floor);
            knownOwners.add(owner);
          } catch (error) {
            if (signal.aborted) throw error;
            // Every URL refused it (the pool already retried): the rest would too; try again later.
            const retryMs = failures.failed();
            if (failures.failures === 1)
              log.warn({
                msg: 'Token account discovery failed; known accounts are still ingested, discovery retries on its own back-off',
                owner,
                retry_in_ms: retryMs,
                err: error,
              });
            retryAt = Date.now() + retryMs;
            failed = true;
            break;
          }
        }
        if (!failed) {
          if (failures.failures > 0) log.info({ msg: 'Token account discovery works again', failures: failures.failures });
          failures.succeeded();
          retryAt = 0;
          if (due) lastDiscovery = Date.now();
        }
      }
      if (added > 0) log.info({ msg: 'Watching new token accounts', added, owners: owners.length });
    },
  };
}

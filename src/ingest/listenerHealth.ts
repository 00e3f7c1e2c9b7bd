import type { Sql } from '../store/index.ts';
import { CHAIN_NAMES, liveChains, type ChainName, type Config } from '../internal/config.ts';
import { loadChains } from '../internal/chains.ts';
import { simulatedHead } from './simulatedChain.ts';
import { readChainHeads } from './heads.ts';

/**
 * A listener is healthy when its head moved within this many block times, and never less than a
 * minute: slow chains and short provider hiccups must not flap the status.
 */
const STALE_BLOCK_TIMES = 20;
const MIN_STALE_SECONDS = 60;

/** One chain's listener as `GET /status` and the dashboard's home page show it. */
export interface ChainListenerStatus {
  chain: ChainName;
  mode: 'live' | 'sandbox' | 'sandbox-only';
  status: 'healthy' | 'lagging' | 'unknown' | 'sandbox-only';
  headBlock: string | null;
  processedBlock: string | null;
  headSeenAt: string | null;
  lagSeconds: number | null;
}

/** Every chain listener's health for one mode, and why the whole is degraded (empty when healthy). */
export interface ListenerHealth {
  status: 'healthy' | 'degraded';
  reasons: string[];
  chains: ChainListenerStatus[];
}

/**
 * The health of each chain listener for `livemode`, from chain_heads: live chains are healthy
 * while their head moves (see STALE_BLOCK_TIMES), chains without an RPC URL are `sandbox-only`
 * for live keys, and the sandbox's simulated chains are always healthy (their heads move only
 * while a sandbox payment is in flight, which is not a lag). One function for `GET /status` and
 * the dashboard, so both say the same thing.
 */
export async function listenerHealth(sql: Sql, params: { config: Config; livemode: boolean; now?: Date }): Promise<ListenerHealth> {
  const chains = loadChains();
  const live = new Set(liveChains(params.config));
  const rows = await readChainHeads(sql, params.livemode);
  const byChain = new Map(rows.map((row) => [row.chain, row]));
  const now = params.now ?? new Date();
  const reasons: string[] = [];
  const report = CHAIN_NAMES.map((name): ChainListenerStatus => {
    const row = byChain.get(name);
    if (!params.livemode) {
      return {
        chain: name,
        mode: 'sandbox',
        status: 'healthy',
        headBlock: simulatedHead(chains[name], params.config.sandboxBlockMs, now.getTime()).head.toString(),
        processedBlock: row?.processedBlock?.toString() ?? null,
        headSeenAt: now.toISOString(),
        lagSeconds: 0,
      };
    }
    if (!live.has(name)) {
      return { chain: name, mode: 'sandbox-only', status: 'sandbox-only', headBlock: null, processedBlock: null, headSeenAt: null, lagSeconds: null };
    }
    const staleAfter = Math.max(MIN_STALE_SECONDS, (chains[name].blockTimeMs * STALE_BLOCK_TIMES) / 1000);
    const status = !row?.headSeenAt ? 'unknown' : (row.lagSeconds ?? 0) <= staleAfter ? 'healthy' : 'lagging';
    if (status === 'unknown') reasons.push(`${name}: the listener has not seen a head yet`);
    if (status === 'lagging') reasons.push(`${name}: the head has not moved for ${row?.lagSeconds} s (lagging after ${staleAfter} s)`);
    return {
      chain: name,
      mode: 'live',
      status,
      headBlock: row?.headBlock?.toString() ?? null,
      processedBlock: row?.processedBlock?.toString() ?? null,
      headSeenAt: row?.headSeenAt?.toISOString() ?? null,
      lagSeconds: row?.lagSeconds ?? null,
    };
  });
  if (params.livemode && live.size === 0) reasons.unshift('no chain is watched in live mode (no SVC_<CHAIN>_RPC_URL is set): live payments cannot be detected');
  return { status: reasons.length > 0 ? 'degraded' : 'healthy', reasons, chains: report };
}

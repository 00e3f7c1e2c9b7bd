import { createSolanaRpc, type Rpc, type SolanaRpcApi } from '@solana/kit';
import type { Logger } from '../../internal/logger.ts';
import type { IngestMetrics } from '../metrics.ts';
import { classifySolanaRpcError } from '../rpcErrors.ts';
import { createEndpointPool } from '../rpcPool.ts';

export { endpointLabel } from '../rpcPool.ts';

/** One HTTP endpoint's @solana/kit client; calls pass `abortSignal` to `send`. */
export type SolanaRpc = Rpc<SolanaRpcApi>;

/** Solana JSON-RPC over several HTTP URLs in failover order (SVC_SOLANA_RPC_URL). */
export interface SolanaRpcPool {
  /** Runs `request` against the first healthy URL, failing over to the next on an error. */
  call<T>(method: string, request: (rpc: SolanaRpc) => { send(options?: { abortSignal?: AbortSignal }): Promise<T> }): Promise<T>;
  readonly endpoints: readonly string[];
}

/** When every URL fails, one call retries this many rounds (0.25 s, 0.5 s, 1 s) before giving up to the caller's backoff. */
const MAX_ROUNDS = 3;

/**
 * Creates the pool: @solana/kit clients behind the shared endpoint pool (../rpcPool.ts), so the
 * EVM ingesters' failover and rate rules apply: a 429 slows that URL down and moves on, any other
 * error (network, timeout, 5xx, a JSON-RPC error) rests it with a growing cooldown and tries the
 * next; every call is timed and every failure counted in the shared `svc_ingest_rpc_*` metrics.
 */
export function createSolanaRpcPool(params: { urls: string[]; logger: Logger; metrics: IngestMetrics; signal?: AbortSignal }): SolanaRpcPool {
  const pool = createEndpointPool<SolanaRpc>({
    chain: 'solana',
    urls: params.urls,
    client: (url) => createSolanaRpc(url),
    classify: classifySolanaRpcError,
    logger: params.logger,
    metrics: params.metrics,
    maxRounds: MAX_ROUNDS,
    signal: params.signal,
    missing: 'SVC_SOLANA_RPC_URL',
  });
  return {
    endpoints: pool.endpoints,
    call: (method, request) => pool.call(method, (client, abortSignal) => request(client).send({ abortSignal })),
  };
}

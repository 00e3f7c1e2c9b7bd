import { createSolanaRpc, type Rpc, type SolanaRpcApi } from '@solana/kit';
import type { Logger } from '../../internal/logger.ts';
import { NonRetryableError, RetryableError } from '../../internal/errors.ts';
import { sleep } from '../../internal/shutdown.ts';
import type { IngestMetrics } from '../evm/metrics.ts';

/** One HTTP endpoint's @solana/kit client; calls pass `abortSignal` to `send`. */
export type SolanaRpc = Rpc<SolanaRpcApi>;

/** Solana JSON-RPC over several HTTP URLs in failover order (SVC_SOLANA_RPC_URL). */
export interface SolanaRpcPool {
  /** Runs `request` against the first healthy URL, failing over to the next on any error. */
  call<T>(method: string, request: (rpc: SolanaRpc) => { send(options?: { abortSignal?: AbortSignal }): Promise<T> }): Promise<T>;
  readonly endpoints: readonly string[];
}

/** A failed URL rests 1 s, doubling per consecutive failure up to 60 s, then is tried again. */
const COOLDOWN_BASE_MS = 1_000;
const COOLDOWN_MAX_MS = 60_000;
/** When every URL fails, one call retries this many rounds (0.25 s, 0.5 s, 1 s) before giving up to the caller's backoff. */
const MAX_ROUNDS = 3;
const ROUND_BACKOFF_MS = 250;
/** Per-request timeout: a healthy provider answers getTransaction well under a second. */
const TIMEOUT_MS = 10_000;

/** `index:host`: tells URLs apart in logs and metrics without leaking a key in the path or query. */
export function endpointLabel(url: string, index: number): string {
  try {
    return `${index}:${new URL(url).host}`;
  } catch {
    return `${index}:invalid`;
  }
}

/**
 * Creates the pool: calls go to the first URL that is not resting; any error (network, timeout,
 * 5xx, 429, a JSON-RPC error) rests that URL with a growing cooldown and tries the next, and every
 * call is timed and every failure counted in the shared `svc_ingest_rpc_*` metrics.
 */
export function createSolanaRpcPool(params: { urls: string[]; logger: Logger; metrics: IngestMetrics; signal?: AbortSignal }): SolanaRpcPool {
  if (params.urls.length === 0) throw new NonRetryableError('solana: no RPC URL configured (SVC_SOLANA_RPC_URL)');
  const endpoints = params.urls.map((url, index) => ({ label: endpointLabel(url, index), rpc: createSolanaRpc(url), failures: 0, restUntil: 0 }));
  const chain = 'solana';

  return {
    endpoints: endpoints.map((endpoint) => endpoint.label),
    async call(method, request) {
      let lastError: unknown;
      for (let round = 0; round < MAX_ROUNDS; round++) {
        if (params.signal?.aborted) throw new RetryableError('solana: stopped');
        const now = Date.now();
        const ready = endpoints.filter((endpoint) => endpoint.restUntil <= now);
        const order = ready.length > 0 ? ready : [...endpoints].sort((a, b) => a.restUntil - b.restUntil).slice(0, 1);
        for (const endpoint of order) {
          const end = params.metrics.rpcDuration.startTimer({ chain, method, endpoint: endpoint.label });
          const timeout = AbortSignal.timeout(TIMEOUT_MS);
          const abortSignal = params.signal ? AbortSignal.any([params.signal, timeout]) : timeout;
          try {
            const result = await request(endpoint.rpc).send({ abortSignal });
            end();
            if (endpoint.failures > 0) params.logger.info({ msg: 'RPC endpoint recovered', chain, endpoint: endpoint.label });
            endpoint.failures = 0;
            return result;
          } catch (error) {
            end();
            lastError = error;
            if (params.signal?.aborted) throw new RetryableError('solana: stopped', { cause: error });
            params.metrics.rpcErrors.inc({ chain, method, endpoint: endpoint.label, kind: 'endpoint' });
            endpoint.failures += 1;
            endpoint.restUntil = Date.now() + Math.min(COOLDOWN_MAX_MS, COOLDOWN_BASE_MS * 2 ** (endpoint.failures - 1));
            params.logger.warn({
              msg: 'RPC endpoint failed; trying the next one',
              chain,
              endpoint: endpoint.label,
              method,
              consecutive_failures: endpoint.failures,
              error: String((error as Error).message ?? error).split('\n')[0],
            });
          }
        }
        await sleep(ROUND_BACKOFF_MS * 2 ** round, params.signal);
      }
      throw new RetryableError(`solana: ${method} failed on every RPC URL`, { cause: lastError });
    },
  };
}

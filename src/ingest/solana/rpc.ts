import { createSolanaRpc, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, SolanaError, type Rpc, type SolanaRpcApi } from '@solana/kit';
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
  /**
   * One JSON-RPC batch: `method` once per entry of `paramsList`, in one HTTP request to the first
   * healthy URL (failover as {@link call}), answers in the same order. Answers are plain
   * `JSON.parse` (integers as numbers, not the bigints @solana/kit makes), so only for results read
   * as such. Any entry's JSON-RPC error fails the whole call, as one failed call would. A URL that
   * refuses batches is asked one request per entry from then on.
   */
  batch<T>(method: string, paramsList: unknown[][]): Promise<T[]>;
  readonly endpoints: readonly string[];
}

/** A URL's answer to a batch that is not a batch: the provider does not take batches. */
class BatchRefusedError extends Error {
  override name = 'BatchRefusedError';
}

interface JsonRpcAnswer {
  id?: unknown;
  result?: unknown;
  error?: { code?: number; message?: string };
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
  /** Each client's URL, for the batches @solana/kit does not send. */
  const urlOf = new Map<SolanaRpc, string>();
  /** URLs that answered a batch with something else than a batch. */
  const noBatches = new Set<string>();
  const pool = createEndpointPool<SolanaRpc>({
    chain: 'solana',
    urls: params.urls,
    client: (url) => {
      const client = createSolanaRpc(url);
      urlOf.set(client, url);
      return client;
    },
    classify: classifySolanaRpcError,
    logger: params.logger,
    metrics: params.metrics,
    maxRounds: MAX_ROUNDS,
    signal: params.signal,
    missing: 'SVC_SOLANA_RPC_URL',
  });
  async function post(url: string, body: unknown, abortSignal: AbortSignal): Promise<unknown> {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: abortSignal });
    if (!response.ok) {
      await response.body?.cancel();
      // The same error @solana/kit throws, so the pool classifies it alike (429: rate).
      throw new SolanaError(SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, { headers: response.headers, message: response.statusText, statusCode: response.status });
    }
    return response.json();
  }

  function resultOf<T>(method: string, answer: JsonRpcAnswer | undefined): T {
    if (!answer || typeof answer !== 'object') throw new Error(`${method}: the batch answer lacks an entry`);
    if (answer.error) throw new Error(`${method}: JSON-RPC error ${answer.error.code ?? ''}: ${answer.error.message ?? 'no message'}`);
    return answer.result as T;
  }

  return {
    endpoints: pool.endpoints,
    call: (method, request) => pool.call(method, (client, abortSignal) => request(client).send({ abortSignal })),
    async batch<T>(method: string, paramsList: unknown[][]) {
      if (paramsList.length === 0) return [];
      return pool.call(method, async (client, abortSignal) => {
        const url = urlOf.get(client)!;
        const one = async (args: unknown[]) =>
          resultOf<T>(method, (await post(url, { jsonrpc: '2.0', id: 0, method, params: args }, abortSignal)) as JsonRpcAnswer);
        if (noBatches.has(url)) return Promise.all(paramsList.map(one));
        const answer = await post(
          url,
          paramsList.map((args, id) => ({ jsonrpc: '2.0', id, method, params: args })),
          abortSignal,
        );
        if (!Array.isArray(answer)) {
          // Some providers answer a batch with one error object (batches off on a plan or a URL).
          const refusal = (answer as JsonRpcAnswer | null)?.error;
          if (refusal && /batch/i.test(refusal.message ?? '')) {
            noBatches.add(url);
            params.logger.warn({
              msg: 'Solana RPC URL refuses JSON-RPC batches; sending one request per call',
              endpoint: pool.endpoints[[...urlOf.values()].indexOf(url)],
              answer: refusal.message,
            });
            return Promise.all(paramsList.map(one));
          }
          throw new BatchRefusedError(`${method}: a batch of ${paramsList.length} was answered ${JSON.stringify(answer).slice(0, 200)}`);
        }
        const byId = new Map((answer as JsonRpcAnswer[]).map((entry) => [entry?.id, entry]));
        return paramsList.map((_, id) => resultOf<T>(method, byId.get(id)));
      });
    },
  };
}

import { http, webSocket, type Transport } from 'viem';
import type { Logger } from '../../internal/logger.ts';
import type { IngestMetrics } from '../metrics.ts';
import { classifyRpcError } from '../rpcErrors.ts';
import { createEndpointPool, DEFAULT_TIMEOUT_MS } from '../rpcPool.ts';

export { endpointLabel, RpcRequestRejected } from '../rpcPool.ts';

/** JSON-RPC access to one EVM chain through several URLs with failover, timeouts, backoff and adaptive rate. */
export interface Rpc {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** One call to one URL (no failover): start-up checks ask every URL. */
  requestAt<T = unknown>(index: number, method: string, params?: unknown[]): Promise<T>;
  /** Endpoint labels (`index:host`) in failover order, as the metrics name them. */
  readonly endpoints: readonly string[];
  close(): Promise<void>;
}

/** When every URL fails, the call itself retries this many rounds with exponential backoff (0.25 s … 8 s). */
const MAX_ROUNDS = 6;

type ViemTransport = ReturnType<Transport>;

/**
 * Creates the RPC client of one EVM chain: viem transports (HTTP, or WebSocket for a
 * WebSocket-only chain) behind the shared endpoint pool (../rpcPool.ts), whose failover and
 * rate rules apply; errors the node gives about the request itself (`range`, `rejected`) are
 * thrown at once as {@link RpcRequestRejected}. The transports carry the per-request timeout.
 */
export function createRpc(params: { chain: string; urls: string[]; logger: Logger; metrics: IngestMetrics; timeoutMs?: number; signal?: AbortSignal }): Rpc {
  const timeout = params.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pool = createEndpointPool<ViemTransport>({
    chain: params.chain,
    urls: params.urls,
    client: (url) =>
      (url.startsWith('ws') ? webSocket(url, { timeout, retryCount: 0, reconnect: false }) : http(url, { timeout, retryCount: 0 }))({ retryCount: 0, timeout }),
    classify: classifyRpcError,
    logger: params.logger,
    metrics: params.metrics,
    maxRounds: MAX_ROUNDS,
    timeoutMs: timeout,
    signal: params.signal,
  });
  const send =
    <T>(method: string, args: unknown[]) =>
    (transport: ViemTransport) =>
      transport.request({ method, params: args } as never) as Promise<T>;

  return {
    endpoints: pool.endpoints,
    requestAt: (index, method, args = []) => pool.callAt(index, method, send(method, args)),
    request: (method, args = []) => pool.call(method, send(method, args)),
    async close() {
      for (const transport of pool.clients) {
        const value = transport.value as { getRpcClient?: () => Promise<{ close(): void }> } | undefined;
        if (value?.getRpcClient)
          await value
            .getRpcClient()
            .then((client) => client.close())
            .catch(() => {});
      }
    },
  };
}

import { http, RpcRequestError, webSocket, type Transport } from 'viem';
import { getHttpRpcClient } from 'viem/utils';
import type { Logger } from '../../internal/logger.ts';
import type { IngestMetrics } from '../metrics.ts';
import { classifyRpcError, retryAfterMs } from '../rpcErrors.ts';
import { createEndpointPool, DEFAULT_TIMEOUT_MS } from '../rpcPool.ts';

export { endpointLabel, RpcRequestRejected } from '../rpcPool.ts';

/** JSON-RPC access to one EVM chain through several URLs with failover, timeouts, backoff and adaptive rate. */
export interface Rpc {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /**
   * The same method with each of `calls`' params, answers in their order: one JSON-RPC batch (one
   * HTTP request through the pool's failover and rate rules) per {@link BATCH_SIZE} calls over
   * HTTP; separate requests over WebSocket or to a URL that refused a batch. Any call's error
   * fails the batch as that error would fail the call alone.
   */
  requestBatch<T = unknown>(method: string, calls: unknown[][]): Promise<T[]>;
  /** One call to one URL (no failover): start-up checks ask every URL. */
  requestAt<T = unknown>(index: number, method: string, params?: unknown[]): Promise<T>;
  /** Endpoint labels (`index:host`) in failover order, as the metrics name them. */
  readonly endpoints: readonly string[];
  close(): Promise<void>;
}

/** When every URL fails, the call itself retries this many rounds with exponential backoff (0.25 s … 8 s). */
const MAX_ROUNDS = 6;

/**
 * Calls per JSON-RPC batch. Latency is paid per HTTP request, so a range's 64 unfinalized headers
 * cost two round trips instead of eight waves of eight; providers bill and limit a batch by its
 * calls (Alchemy's compute units, Infura's credits), so a batch is no way around a rate limit, and
 * some refuse large ones (Alchemy advises under 50, free tiers cap lower): 32 stays under the
 * usual caps while cutting the round trips 32-fold.
 */
export const BATCH_SIZE = 32;

type ViemTransport = ReturnType<Transport>;
type HttpRpcClient = ReturnType<typeof getHttpRpcClient>;
/** One URL's clients: viem's transport, and for HTTP the raw client that sends batches (until the URL refuses one). */
interface Client {
  transport: ViemTransport;
  batch?: HttpRpcClient;
}

/**
 * Creates the RPC client of one EVM chain: viem transports (HTTP, or WebSocket for a
 * WebSocket-only chain) behind the shared endpoint pool (../rpcPool.ts), whose failover and
 * rate rules apply; errors the node gives about the request itself (`range`, `rejected`) are
 * thrown at once as {@link RpcRequestRejected}. The transports carry the per-request timeout.
 */
export function createRpc(params: { chain: string; urls: string[]; logger: Logger; metrics: IngestMetrics; timeoutMs?: number; signal?: AbortSignal }): Rpc {
  const timeout = params.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pool = createEndpointPool<Client>({
    chain: params.chain,
    urls: params.urls,
    client: (url) =>
      url.startsWith('ws')
        ? { transport: webSocket(url, { timeout, retryCount: 0, reconnect: false })({ retryCount: 0, timeout }) }
        : { transport: http(url, { timeout, retryCount: 0 })({ retryCount: 0, timeout }), batch: getHttpRpcClient(url, { timeout }) },
    classify: classifyRpcError,
    retryAfter: (error) => retryAfterMs(error),
    logger: params.logger,
    metrics: params.metrics,
    maxRounds: MAX_ROUNDS,
    timeoutMs: timeout,
    signal: params.signal,
  });
  const send =
    <T>(method: string, args: unknown[]) =>
    (client: Client) =>
      client.transport.request({ method, params: args } as never) as Promise<T>;

  /**
   * One batch to one URL. A URL that refuses batches (a JSON-RPC error about the request instead
   * of one answer per call, as nodes and gateways without batches answer) gets separate requests,
   * now and from then on; a throttled, failed or timed-out batch is the pool's, as a call's is.
   */
  const sendBatch =
    <T>(method: string, calls: unknown[][]) =>
    async (client: Client): Promise<T[]> => {
      const separately = () => Promise.all(calls.map((args) => send<T>(method, args)(client)));
      if (!client.batch || calls.length === 1) return separately();
      const refused = () => {
        params.logger.info({ msg: 'RPC endpoint refuses JSON-RPC batches; sending calls one by one', chain: params.chain });
        client.batch = undefined;
        return separately();
      };
      const body = calls.map((args, id) => ({ jsonrpc: '2.0' as const, id, method, params: args }));
      let answers: unknown;
      try {
        answers = await client.batch.request({ body });
      } catch (error) {
        if (error instanceof RpcRequestError && classifyRpcError(error, method) === 'rejected') return refused();
        throw error;
      }
      type Answer = { id?: unknown; result?: T; error?: { code: number; message: string } };
      const list = (Array.isArray(answers) ? answers : [answers]) as Answer[];
      const byId = new Map(list.map((answer) => [answer?.id, answer]));
      if (list.length !== calls.length || body.some((call) => !byId.has(call.id))) {
        const whole = list[0]?.error && new RpcRequestError({ body, error: list[0].error, url: '' });
        if (whole && classifyRpcError(whole, method) !== 'rejected') throw whole;
        return refused();
      }
      return body.map((call) => {
        const answer = byId.get(call.id)!;
        if (answer.error) throw new RpcRequestError({ body: call, error: answer.error, url: '' });
        return answer.result as T;
      });
    };

  return {
    endpoints: pool.endpoints,
    requestAt: (index, method, args = []) => pool.callAt(index, method, send(method, args)),
    request: (method, args = []) => pool.call(method, send(method, args)),
    async requestBatch<T>(method: string, calls: unknown[][]) {
      const chunks: unknown[][][] = [];
      for (let i = 0; i < calls.length; i += BATCH_SIZE) chunks.push(calls.slice(i, i + BATCH_SIZE));
      const answers = await Promise.all(chunks.map((chunk) => pool.call(method, sendBatch<T>(method, chunk))));
      return answers.flat();
    },
    async close() {
      for (const { transport } of pool.clients) {
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

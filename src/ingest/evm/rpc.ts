import { http, webSocket, type Transport } from 'viem';
import type { Logger } from '../../internal/logger.ts';
import { sleep } from '../../internal/shutdown.ts';
import { NonRetryableError, RetryableError } from '../../internal/errors.ts';
import type { IngestMetrics } from './metrics.ts';
import { classifyRpcError, type RpcErrorKind } from './rpcErrors.ts';

/**
 * A JSON-RPC error the node gave for the request itself (kind `range` or `rejected`). The pool
 * sends it to no other URL (another node would refuse the same request), but it is retryable for
 * the caller: a refused range is asked for again in smaller ones, and a lagging node's refusal of
 * a block it has not seen yet passes; the EVM ingester's cycle retries it with backoff.
 */
export class RpcRequestRejected extends RetryableError {
  override name = 'RpcRequestRejected';
  readonly kind: RpcErrorKind;
  constructor(message: string, kind: RpcErrorKind, cause: unknown) {
    super(message, { cause });
    this.kind = kind;
  }
}

/** JSON-RPC access to one chain through several URLs with failover, timeouts, backoff and adaptive rate. */
export interface Rpc {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** One call to one URL (no failover): start-up checks ask every URL. */
  requestAt<T = unknown>(index: number, method: string, params?: unknown[]): Promise<T>;
  /** Endpoint labels (`index:host`) in failover order, as the metrics name them. */
  readonly endpoints: readonly string[];
  close(): Promise<void>;
}

/** Per-request timeout. 10 s is viem's default and well above a healthy provider's p99. */
const DEFAULT_TIMEOUT_MS = 10_000;
/** A failed URL rests 1 s, doubling per consecutive failure up to 60 s, then gets tried again. */
const COOLDOWN_BASE_MS = 1_000;
const COOLDOWN_MAX_MS = 60_000;
/** When every URL fails, the call itself retries this many rounds with exponential backoff (0.25 s … 8 s). */
const MAX_ROUNDS = 6;
const ROUND_BACKOFF_MS = 250;
/**
 * Adaptive rate (multiplicative back-off, as TCP does): a 429 makes the minimum spacing between
 * requests to that URL 1.5 times longer (from 20 ms, up to 5 s); each success shortens it by
 * 10 %, so the rate settles just under the provider's limit (one 429 per ~4 successes holds it
 * steady) and recovers within tens of requests once the provider stops throttling.
 */
const RATE_MIN_SPACING_MS = 20;
const RATE_MAX_SPACING_MS = 5_000;
const RATE_BACKOFF = 1.5;
const RATE_RECOVERY = 0.9;

interface Endpoint {
  label: string;
  transport: ReturnType<Transport>;
  failures: number;
  restUntil: number;
  spacingMs: number;
  nextSlot: number;
  /** When the spacing last grew: a 429 to a request sent before that was already answered for. */
  slowedAt: number;
}

/** `index:host`: enough to tell URLs apart in logs and metrics without leaking a key in the path or query. */
export function endpointLabel(url: string, index: number): string {
  try {
    return `${index}:${new URL(url).host}`;
  } catch {
    return `${index}:invalid`;
  }
}

/**
 * Creates the RPC client of one chain. Each call goes to the first URL that is not resting;
 * network errors, timeouts, 5xx and 429 move it to the next URL and rest the failed one with a
 * growing cooldown (a dead URL is skipped, then retried later). Errors the node gives about the
 * request itself (`range`, `rejected`) are thrown at once as {@link RpcRequestRejected}.
 */
export function createRpc(params: {
  chain: string;
  urls: string[];
  logger: Logger;
  metrics: IngestMetrics;
  timeoutMs?: number;
  signal?: AbortSignal;
}): Rpc {
  if (params.urls.length === 0) throw new NonRetryableError(`${params.chain}: no RPC URL configured`);
  const timeout = params.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const endpoints: Endpoint[] = params.urls.map((url, index) => ({
    label: endpointLabel(url, index),
    transport: (url.startsWith('ws') ? webSocket(url, { timeout, retryCount: 0, reconnect: false }) : http(url, { timeout, retryCount: 0 }))({ retryCount: 0, timeout }),
    failures: 0,
    restUntil: 0,
    spacingMs: 0,
    nextSlot: 0,
    slowedAt: 0,
  }));
  const log = params.logger;

  /** Sets `sentAt` on the error it throws, so a burst of 429s slows the URL down once, not once per request. */
  async function callOnce<T>(endpoint: Endpoint, method: string, args: unknown[]): Promise<T> {
    const now = Date.now();
    if (endpoint.spacingMs > 0) {
      const wait = endpoint.nextSlot - now;
      endpoint.nextSlot = Math.max(now, endpoint.nextSlot) + endpoint.spacingMs;
      if (wait > 0) await sleep(wait, params.signal);
    }
    const end = params.metrics.rpcDuration.startTimer({ chain: params.chain, method, endpoint: endpoint.label });
    const sentAt = Date.now();
    try {
      const result = (await endpoint.transport.request({ method, params: args } as never)) as T;
      end();
      return result;
    } catch (error) {
      end();
      throw Object.assign(error as object, { sentAt });
    }
  }

  return {
    endpoints: endpoints.map((endpoint) => endpoint.label),
    requestAt: (index, method, args = []) => callOnce(endpoints[index]!, method, args),
    async request<T>(method: string, args: unknown[] = []): Promise<T> {
      let lastError: unknown;
      for (let round = 0; round < MAX_ROUNDS; round++) {
        if (params.signal?.aborted) throw new RetryableError(`${params.chain}: stopped`);
        const now = Date.now();
        const ready = endpoints.filter((endpoint) => endpoint.restUntil <= now);
        // Everything resting: try the one that wakes first rather than nothing.
        const order = ready.length > 0 ? ready : [...endpoints].sort((a, b) => a.restUntil - b.restUntil).slice(0, 1);
        for (const endpoint of order) {
          try {
            const result = await callOnce<T>(endpoint, method, args);
            if (endpoint.failures > 0) log.info({ msg: 'RPC endpoint recovered', chain: params.chain, endpoint: endpoint.label });
            endpoint.failures = 0;
            endpoint.spacingMs = endpoint.spacingMs * RATE_RECOVERY < RATE_MIN_SPACING_MS ? 0 : endpoint.spacingMs * RATE_RECOVERY;
            return result;
          } catch (error) {
            lastError = error;
            const kind = classifyRpcError(error, method);
            params.metrics.rpcErrors.inc({ chain: params.chain, method, endpoint: endpoint.label, kind });
            if (kind === 'range' || kind === 'rejected') {
              throw new RpcRequestRejected(`${params.chain}: ${method} rejected by ${endpoint.label}`, kind, error);
            }
            if (kind === 'rate') {
              const sentAt = (error as { sentAt?: number }).sentAt ?? Date.now();
              if (sentAt >= endpoint.slowedAt) {
                endpoint.spacingMs = Math.min(RATE_MAX_SPACING_MS, Math.max(RATE_MIN_SPACING_MS, endpoint.spacingMs * RATE_BACKOFF));
                endpoint.slowedAt = Date.now();
                log.warn({ msg: 'RPC endpoint rate-limits us; slowing down', chain: params.chain, endpoint: endpoint.label, spacing_ms: Math.round(endpoint.spacingMs) });
              }
            } else {
              endpoint.failures += 1;
              endpoint.restUntil = Date.now() + Math.min(COOLDOWN_MAX_MS, COOLDOWN_BASE_MS * 2 ** (endpoint.failures - 1));
              log.warn({
                msg: 'RPC endpoint failed; trying the next one',
                chain: params.chain,
                endpoint: endpoint.label,
                method,
                consecutive_failures: endpoint.failures,
                error: (error as Error).message?.split('\n')[0],
              });
            }
          }
        }
        await sleep(ROUND_BACKOFF_MS * 2 ** round, params.signal);
      }
      throw new RetryableError(`${params.chain}: ${method} failed on every RPC URL`, { cause: lastError });
    },
    async close() {
      for (const endpoint of endpoints) {
        const value = endpoint.transport.value as { getRpcClient?: () => Promise<{ close(): void }> } | undefined;
        if (value?.getRpcClient) await value.getRpcClient().then((client) => client.close()).catch(() => {});
      }
    },
  };
}

import type { Logger } from '../internal/logger.ts';
import { NonRetryableError, RetryableError } from '../internal/errors.ts';
import { backoffDelay, type BackoffRule } from '../internal/failureBackoff.ts';
import { sleep } from '../internal/shutdown.ts';
import type { IngestMetrics } from './metrics.ts';
import type { RpcErrorKind } from './rpcErrors.ts';

export type { RpcErrorKind };

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

/** `index:host`: enough to tell URLs apart in logs and metrics without leaking a key in the path or query. */
export function endpointLabel(url: string, index: number): string {
  try {
    return `${index}:${new URL(url).host}`;
  } catch {
    return `${index}:invalid`;
  }
}

/** Sends one request with one endpoint's client; `signal` aborts on stop and on the per-request timeout. */
export type Send<C, T> = (client: C, signal: AbortSignal) => Promise<T>;

/** One chain's RPC URLs behind failover, cooldowns, retry rounds and an adaptive rate (see {@link createEndpointPool}). */
export interface EndpointPool<C> {
  /** Endpoint labels (`index:host`) in failover order, as the metrics name them. */
  readonly endpoints: readonly string[];
  /** The endpoints' clients, in the same order (to close them). */
  readonly clients: readonly C[];
  /** Sends to the first URL that is not resting, failing over by the error's kind (see the pool). */
  call<T>(method: string, send: Send<C, T>): Promise<T>;
  /** One request to one URL: no failover, no retry (start-up checks ask every URL). */
  callAt<T>(index: number, method: string, send: Send<C, T>): Promise<T>;
}

/** Per-request timeout. 10 s is viem's default and well above a healthy provider's p99. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** A failed URL rests 1 s, doubling per consecutive failure up to 60 s, then gets tried again. */
const COOLDOWN: BackoffRule = { initialMs: 1_000, maxMs: 60_000 };
/** When every URL failed, the next round of the same call waits 0.25 s, doubling per round (8 s after the sixth). */
const ROUND_BACKOFF: BackoffRule = { initialMs: 250, maxMs: 8_000 };
/**
 * Adaptive rate per URL. A provider's limit is requests (or compute units) per window, usually a
 * second; what the client can see is how many requests that URL answered in the last second when
 * it first said 429. So, once per burst of 429s, the minimum spacing between requests to the URL
 * becomes the larger of 1.5 times what it was (from 20 ms, up to 5 s: TCP's multiplicative
 * back-off, for a limit the last second does not show) and the spacing of 80 % of the rate it
 * just answered (the limit is at most that, so this lands under it at once instead of after a
 * few more bursts of 429s; the 429s to what is sent in the window after it meet a count still
 * full of what was sent before, and do not stretch it again). Each success then shortens the
 * spacing by 10 % down to that 80 % (undoing a stretch by 1.5) and by 1 % below it: the rate creeps
 * back up by about 1 % a request, so a provider that keeps the same limit says 429 about once per
 * ~20 requests (80 % → 100 % of its limit), not once per ~4 as a 10 % recovery all the way did
 * (~20-30 % of the requests refused, each a lost round trip); one that stops throttling gets full
 * speed back after ~100 requests (TCP's slow start to the threshold, then congestion avoidance). A `Retry-After` is honoured: the URL gets no request before it (the call fails
 * over meanwhile), since what is sent inside it is refused anyway and some providers ban clients
 * that ignore it.
 */
const RATE_MIN_SPACING_MS = 20;
const RATE_MAX_SPACING_MS = 5_000;
const RATE_BACKOFF = 1.5;
const RATE_MARGIN = 0.8;
const RATE_RECOVERY = 0.99;
const RATE_FAST_RECOVERY = 0.9;
/** The window over which a URL's answered requests are counted when it first says 429. */
const RATE_WINDOW_MS = 1_000;

interface Endpoint<C> {
  label: string;
  client: C;
  failures: number;
  restUntil: number;
  spacingMs: number;
  nextSlot: number;
  /** When the spacing last grew: a 429 to a request sent before that was already answered for. */
  slowedAt: number;
  /** When the requests this URL answered in the last {@link RATE_WINDOW_MS} were sent, oldest first. */
  answered: number[];
  /** The spacing under the rate answered at the last slow-down: recovery is fast down to it, slow below. */
  targetMs: number;
}

type Attempt<T> = { ok: true; value: T; sentAt: number } | { ok: false; error: unknown; sentAt: number };

/**
 * The RPC endpoint pool both chains' ingesters use. Each call goes to the first URL that is not
 * resting. By the kind `classify` gives a failure (rpcErrors.ts):
 * - `endpoint` (network, timeout, 5xx, auth): the URL rests with a growing cooldown (a dead URL is
 *   skipped, then tried again later) and the call moves to the next URL;
 * - `rate` (429): the URL's request spacing grows (once per burst) and the call moves on;
 * - `range` / `rejected` (the node refused the request itself): thrown at once as
 *   {@link RpcRequestRejected}.
 * When every URL failed, the call waits and tries another round, `maxRounds` in all, then throws
 * a RetryableError. Every request is timed and every failure counted in `svc_ingest_rpc_*`.
 */
export function createEndpointPool<C>(params: {
  chain: string;
  urls: string[];
  client: (url: string) => C;
  classify: (error: unknown, method: string) => RpcErrorKind;
  logger: Logger;
  metrics: Pick<IngestMetrics, 'rpcDuration' | 'rpcErrors'>;
  maxRounds: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Said in the error when no URL is configured (which variable to set). */
  missing?: string;
  /** How long a `rate` failure asked us to wait (its `Retry-After`), when it said. */
  retryAfter?: (error: unknown) => number | undefined;
}): EndpointPool<C> {
  const { chain, logger: log, metrics } = params;
  if (params.urls.length === 0) throw new NonRetryableError(`${chain}: no RPC URL configured${params.missing ? ` (${params.missing})` : ''}`);
  const timeoutMs = params.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const endpoints: Endpoint<C>[] = params.urls.map((url, index) => ({
    label: endpointLabel(url, index),
    client: params.client(url),
    failures: 0,
    restUntil: 0,
    spacingMs: 0,
    nextSlot: 0,
    slowedAt: 0,
    answered: [],
    targetMs: 0,
  }));

  /** Keeps the URL's request spacing, then sends once; a failure carries when it was sent, so a burst of 429s slows the URL down once. */
  async function attempt<T>(endpoint: Endpoint<C>, method: string, send: Send<C, T>): Promise<Attempt<T>> {
    const now = Date.now();
    if (endpoint.spacingMs > 0) {
      const wait = endpoint.nextSlot - now;
      endpoint.nextSlot = Math.max(now, endpoint.nextSlot) + endpoint.spacingMs;
      if (wait > 0) await sleep(wait, params.signal);
    }
    const end = metrics.rpcDuration.startTimer({ chain, method, endpoint: endpoint.label });
    const timeout = AbortSignal.timeout(timeoutMs);
    const sentAt = Date.now();
    try {
      const value = await send(endpoint.client, params.signal ? AbortSignal.any([params.signal, timeout]) : timeout);
      return { ok: true, value, sentAt };
    } catch (error) {
      return { ok: false, error, sentAt };
    } finally {
      end();
    }
  }

  /** Applies what a failure's kind means to its URL; throws when the call must not go on to the next one. */
  function failed(endpoint: Endpoint<C>, method: string, error: unknown, sentAt: number) {
    if (params.signal?.aborted) throw new RetryableError(`${chain}: stopped`, { cause: error });
    const kind = params.classify(error, method);
    metrics.rpcErrors.inc({ chain, method, endpoint: endpoint.label, kind });
    if (kind === 'range' || kind === 'rejected') throw new RpcRequestRejected(`${chain}: ${method} rejected by ${endpoint.label}`, kind, error);
    if (kind === 'rate') {
      const now = Date.now();
      if (sentAt >= endpoint.slowedAt) {
        const answered = endpoint.answered.filter((at) => at > now - RATE_WINDOW_MS).length;
        const underObserved = answered > 0 ? RATE_WINDOW_MS / (answered * RATE_MARGIN) : 0;
        if (underObserved > 0) endpoint.targetMs = underObserved;
        endpoint.spacingMs = Math.min(RATE_MAX_SPACING_MS, Math.max(RATE_MIN_SPACING_MS, endpoint.spacingMs * RATE_BACKOFF, underObserved));
        // Set from what the URL answered, the spacing is under its limit already: the 429s to what
        // is sent in the next window meet a count still full of what was sent before, so they do
        // not stretch it again (without that, one burst stretched 63 ms to a second in eight steps).
        endpoint.slowedAt = underObserved > 0 ? now + RATE_WINDOW_MS : now;
        log.warn({ msg: 'RPC endpoint rate-limits us; slowing down', chain, endpoint: endpoint.label, spacing_ms: Math.round(endpoint.spacingMs) });
      }
      const wait = params.retryAfter?.(error);
      if (wait !== undefined) {
        // Every later request to this URL waits for it; calls fail over to another URL meanwhile.
        endpoint.nextSlot = Math.max(endpoint.nextSlot, now + wait);
        endpoint.restUntil = Math.max(endpoint.restUntil, now + wait);
      }
      return;
    }
    endpoint.failures += 1;
    endpoint.restUntil = Date.now() + backoffDelay(endpoint.failures, COOLDOWN);
    log.warn({
      msg: 'RPC endpoint failed; trying the next one',
      chain,
      endpoint: endpoint.label,
      method,
      consecutive_failures: endpoint.failures,
      error: String((error as Error)?.message ?? error).split('\n')[0],
    });
  }

  return {
    endpoints: endpoints.map((endpoint) => endpoint.label),
    clients: endpoints.map((endpoint) => endpoint.client),
    async callAt(index, method, send) {
      const result = await attempt(endpoints[index]!, method, send);
      if (!result.ok) throw result.error;
      return result.value;
    },
    async call(method, send) {
      let lastError: unknown;
      for (let round = 0; round < params.maxRounds; round++) {
        if (params.signal?.aborted) throw new RetryableError(`${chain}: stopped`);
        const now = Date.now();
        const ready = endpoints.filter((endpoint) => endpoint.restUntil <= now);
        // Everything resting: try the one that wakes first rather than nothing.
        const order = ready.length > 0 ? ready : [...endpoints].sort((a, b) => a.restUntil - b.restUntil).slice(0, 1);
        for (const endpoint of order) {
          const result = await attempt(endpoint, method, send);
          if (result.ok) {
            if (endpoint.failures > 0) log.info({ msg: 'RPC endpoint recovered', chain, endpoint: endpoint.label });
            endpoint.failures = 0;
            endpoint.answered.push(result.sentAt);
            while (endpoint.answered[0]! <= result.sentAt - RATE_WINDOW_MS) endpoint.answered.shift();
            const shorter =
              endpoint.spacingMs > endpoint.targetMs
                ? Math.max(endpoint.targetMs, endpoint.spacingMs * RATE_FAST_RECOVERY)
                : endpoint.spacingMs * RATE_RECOVERY;
            endpoint.spacingMs = shorter < RATE_MIN_SPACING_MS ? 0 : shorter;
            return result.value;
          }
          lastError = result.error;
          failed(endpoint, method, result.error, result.sentAt);
        }
        await sleep(backoffDelay(round + 1, ROUND_BACKOFF), params.signal);
      }
      throw new RetryableError(`${chain}: ${method} failed on every RPC URL`, { cause: lastError });
    },
  };
}

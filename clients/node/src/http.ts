import { randomUUID } from 'node:crypto';
import { ConflictError, APIConnectionError, errorFromResponse, type GatewayError } from './errors.ts';
import { DEFAULT_BASE_URL } from './generated/resources.ts';
import { VERSION } from './version.ts';

/** How the client authenticates and retries; only `apiKey` is required. */
export interface ClientOptions {
  /** A secret API key: `svc_test_…` / `svc_sk_…` (sandbox) or `svc_live_…`. */
  apiKey: string;
  /** Default `http://127.0.0.1:8080/api/v1`: the gateway's URL with the `/api/v1` prefix. */
  baseUrl?: string;
  /** `bearer` (default): `Authorization: Bearer <key>` (Interface A); `x-api-key`: `X-API-Key: <key>` (Interface B). Both work on every route. */
  authHeader?: 'bearer' | 'x-api-key';
  /** Retries after the first attempt (network errors, 409 in flight, 429, 5xx); default 2. */
  maxRetries?: number;
  /** Milliseconds one attempt may take before it counts as a network error; default 30 000. */
  timeoutMs?: number;
  /** Exponential backoff between retries without Retry-After: first wait and cap, in ms; default 500 and 8 000. */
  retryBackoff?: { initialMs?: number; maxMs?: number };
  /** A Retry-After longer than this is not waited for: the error is thrown at once; default 60 000 ms. */
  maxRetryAfterMs?: number;
  /** Called before each retry (logging, metrics). */
  onRetry?: (event: RetryEvent) => void;
  /** The fetch to use; default the global one (Node 18+). */
  fetch?: typeof fetch;
}

/** Per-call options, the last argument of every method. */
export interface RequestOptions {
  /** The Idempotency-Key of this POST; default a new random one per call, kept across its retries. */
  idempotencyKey?: string;
  maxRetries?: number;
  timeoutMs?: number;
  /** Aborts the call, its retries and their waits. */
  signal?: AbortSignal;
}

/** What `onRetry` learns about a retry about to happen. */
export interface RetryEvent {
  method: string;
  path: string;
  /** 1 for the first retry. */
  attempt: number;
  delayMs: number;
  error: GatewayError;
  idempotencyKey: string | undefined;
}

/** One request in the client's terms: a path under the base URL, query values, a JSON body. */
export interface ApiRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: object;
  body?: unknown;
}

export interface Transport {
  request<T>(request: ApiRequest, options?: RequestOptions): Promise<T>;
}

/**
 * The 409 the gateway gives while a request with the same Idempotency-Key is still running: the
 * one 409 worth retrying (other 409s are conflicts with an object's state). The gateway sends no
 * code or header for it yet, so its message is the signal; a Retry-After on any 409 is honoured too.
 */
export const IN_FLIGHT_MESSAGE = 'a request with this Idempotency-Key is still being processed';

const DEFAULTS = { maxRetries: 2, timeoutMs: 30_000, initialMs: 500, maxMs: 8_000, maxRetryAfterMs: 60_000 };

/** Whether an error is worth another attempt with the same request (and Idempotency-Key). */
export function isRetryable(error: GatewayError): boolean {
  if (error instanceof APIConnectionError) return true;
  if (error instanceof ConflictError) return error.headers['retry-after'] !== undefined || error.message.startsWith(IN_FLIGHT_MESSAGE);
  return error.status === 429 || (error.status !== undefined && error.status >= 500);
}

/** Retry-After (delay-seconds or an HTTP date) in ms from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function queryString(query: object | undefined): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.append(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** The HTTP layer shared by every generated method: authentication, retries, idempotency, errors. */
export function createTransport(options: ClientOptions): Transport {
  if (!options.apiKey) throw new TypeError('apiKey is required');
  const baseUrl = (options.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  const doFetch = options.fetch ?? globalThis.fetch;
  const auth: Record<string, string> = options.authHeader === 'x-api-key' ? { 'x-api-key': options.apiKey } : { authorization: `Bearer ${options.apiKey}` };
  const initialMs = options.retryBackoff?.initialMs ?? DEFAULTS.initialMs;
  const maxMs = options.retryBackoff?.maxMs ?? DEFAULTS.maxMs;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs;

  /** One attempt: an answer (any status) or an APIConnectionError. */
  async function attempt(
    url: string,
    init: RequestInit,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; headers: Record<string, string>; body: unknown }> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => controller.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await doFetch(url, { ...init, signal: controller.signal });
      const text = await response.text();
      const headers = Object.fromEntries(response.headers.entries());
      let body: unknown = text;
      if (text && (headers['content-type'] ?? '').includes('json')) {
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON after all: keep the text, the error shows it.
        }
      }
      return { status: response.status, headers, body };
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      const reason = controller.signal.aborted ? (controller.signal.reason as Error) : (error as Error);
      throw new APIConnectionError(
        `${init.method} ${url}: ${reason.message}${(reason as { cause?: Error }).cause?.message ? ` (${(reason as { cause?: Error }).cause!.message})` : ''}`,
        { cause: reason },
      );
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    async request<T>(request: ApiRequest, call: RequestOptions = {}): Promise<T> {
      const url = `${baseUrl}${request.path}${queryString(request.query)}`;
      const idempotencyKey = request.method === 'POST' ? (call.idempotencyKey ?? randomUUID()) : undefined;
      const headers: Record<string, string> = { ...auth, accept: 'application/json', 'user-agent': `svc-gateway-node/${VERSION}` };
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      if (request.body !== undefined) headers['content-type'] = 'application/json';
      const init: RequestInit = {
        method: request.method,
        headers,
        ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
        redirect: 'manual',
      };
      const maxRetries = call.maxRetries ?? options.maxRetries ?? DEFAULTS.maxRetries;
      const timeoutMs = call.timeoutMs ?? options.timeoutMs ?? DEFAULTS.timeoutMs;

      for (let retry = 0; ; retry++) {
        let error: GatewayError;
        try {
          const answer = await attempt(url, init, timeoutMs, call.signal);
          if (answer.status >= 200 && answer.status < 300) return answer.body as T;
          error = errorFromResponse(answer.status, answer.headers, answer.body);
        } catch (thrown) {
          if (!(thrown instanceof APIConnectionError)) throw thrown;
          error = thrown;
        }
        if (retry >= maxRetries || !isRetryable(error)) throw error;
        const retryAfterMs = parseRetryAfter(error.headers['retry-after']);
        if (retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs) throw error;
        // Equal jitter: half the exponential step fixed, half random, so clients spread out.
        const step = Math.min(maxMs, initialMs * 2 ** retry);
        const delayMs = retryAfterMs ?? Math.round(step / 2 + (Math.random() * step) / 2);
        options.onRetry?.({ method: request.method, path: request.path, attempt: retry + 1, delayMs, error, idempotencyKey });
        await sleep(delayMs, call.signal);
      }
    },
  };
}

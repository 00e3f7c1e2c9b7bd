import {
  BaseError as ViemBaseError,
  HttpRequestError,
  LimitExceededRpcError,
  ResponseBodyTooLargeError,
  RpcRequestError,
  TimeoutError,
  WebSocketRequestError,
  SocketClosedError,
} from 'viem';
import { isSolanaError, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR } from '@solana/kit';

/**
 * The one place that reads a failed RPC call's status numbers, codes and messages (EVM through
 * viem, Solana through @solana/kit) and says what it means; everything else decides from the
 * kind it returns.
 *
 * What a failed JSON-RPC call means for the caller:
 * - `range`: an `eth_getLogs` range or response too big for the provider: split the range.
 * - `rate`: the provider throttles us (HTTP 429 or a rate message): slow down, try another URL.
 * - `endpoint`: the URL is unusable right now (network, timeout, 5xx, auth): fail over.
 * - `rejected`: the node answered with a JSON-RPC error about the request itself.
 */
export type RpcErrorKind = 'range' | 'rate' | 'endpoint' | 'rejected';

/**
 * Providers phrase "your eth_getLogs range or result is too big" in their own words (Alchemy,
 * Infura, QuickNode, Ankr, public nodes, geth, erigon); this is the one place that reads them.
 */
const RANGE_MESSAGE =
  /block range|range (is )?too (large|wide|big)|range (limit|exceeded)|too many (results|logs|blocks)|more than \d+ (results|logs|blocks)|returned more than|limit exceeded|response size|result size|too large|exceed(s|ed)? (the )?max|max(imum)? (block )?range|query timeout|timed out/i;

const RATE_MESSAGE = /rate limit|too many requests|request rate|requests per|capacity|throttl|daily request count|exceeded your/i;

function messagesOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 8; depth++) {
    if (current instanceof ViemBaseError) parts.push(current.shortMessage, current.details ?? '');
    else if (current instanceof Error) parts.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(' | ');
}

function find<T>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  let current: unknown = error;
  for (let depth = 0; current && depth < 8; depth++) {
    if (current instanceof type) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Sorts a failed EVM JSON-RPC call (viem) into one of the kinds above; `method` matters for `range`. */
export function classifyRpcError(error: unknown, method: string): RpcErrorKind {
  const text = messagesOf(error);
  if (find(error, ResponseBodyTooLargeError)) return method === 'eth_getLogs' ? 'range' : 'endpoint';
  const http = find(error, HttpRequestError);
  if (http?.status === 429 || find(error, RpcRequestError)?.status === 429 || (error as { code?: number }).code === 429) return 'rate';
  if (RATE_MESSAGE.test(text)) return 'rate';
  if (find(error, TimeoutError)) return method === 'eth_getLogs' ? 'range' : 'endpoint';
  if (http) {
    if (http.status === undefined || http.status >= 500 || http.status === 401 || http.status === 403 || http.status === 404) return 'endpoint';
    if (method === 'eth_getLogs' && (http.status === 413 || RANGE_MESSAGE.test(text))) return 'range';
    return 'endpoint';
  }
  if (find(error, WebSocketRequestError) || find(error, SocketClosedError)) return 'endpoint';
  const rpc = find(error, RpcRequestError) ?? (typeof (error as { code?: unknown }).code === 'number' ? error : undefined);
  if (rpc) {
    if (method === 'eth_getLogs' && (find(error, LimitExceededRpcError) || RANGE_MESSAGE.test(text))) return 'range';
    // -32603 internal error and -32000-style "header not found" from a lagging or sick node.
    if ((rpc as { code?: number }).code === -32603) return 'endpoint';
    return 'rejected';
  }
  if (method === 'eth_getLogs' && RANGE_MESSAGE.test(text)) return 'range';
  return 'endpoint';
}

/**
 * How many times too large an `eth_getLogs` response was, when the transport measured it (viem's
 * body limit: the node's `Content-Length` against the limit); undefined otherwise. A range of
 * `n` blocks whose answer was `k` times the limit fits in about `n / k` blocks of the same
 * density, so the caller can shrink once instead of halving until it fits.
 */
export function responseOversize(error: unknown): number | undefined {
  const tooLarge = find(error, ResponseBodyTooLargeError);
  if (!tooLarge || !(tooLarge.maxSize > 0) || !(tooLarge.size > tooLarge.maxSize)) return undefined;
  return tooLarge.size / tooLarge.maxSize;
}

/** Longest `Retry-After` honoured: a longer one (a daily quota) is the URL's cooldown's business, not a pause of every call. */
const RETRY_AFTER_MAX_MS = 60_000;

/**
 * How long a throttled EVM request's provider asked us to wait (its `Retry-After` header, in
 * seconds or as an HTTP date, capped at 60 s); undefined when it did not say.
 */
export function retryAfterMs(error: unknown, now = Date.now()): number | undefined {
  const headers = find(error, HttpRequestError)?.headers ?? find(error, RpcRequestError)?.headers;
  const value = headers?.get('retry-after')?.trim();
  if (!value) return undefined;
  const ms = /^\d+(\.\d+)?$/.test(value) ? Number(value) * 1000 : Date.parse(value) - now;
  if (!Number.isFinite(ms) || ms <= 0) return undefined;
  return Math.min(ms, RETRY_AFTER_MAX_MS);
}

/**
 * Sorts a failed Solana JSON-RPC call (@solana/kit) by the same rules, as far as they apply: an
 * HTTP 429 or a rate message is `rate`; anything else, a JSON-RPC error included, is `endpoint`
 * (Solana nodes behind one URL disagree about recent slots, so another URL may well answer what
 * this one refused; `range` and `rejected` are EVM `eth_getLogs` and request errors).
 */
export function classifySolanaRpcError(error: unknown): RpcErrorKind {
  let current: unknown = error;
  for (let depth = 0; current && depth < 8; depth++) {
    if (isSolanaError(current, SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR) && current.context.statusCode === 429) return 'rate';
    current = (current as { cause?: unknown }).cause;
  }
  if (RATE_MESSAGE.test(messagesOf(error))) return 'rate';
  return 'endpoint';
}

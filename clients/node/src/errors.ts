/**
 * Errors the client throws. Every answer of the gateway that is not 2xx becomes a GatewayError
 * subclass chosen by its status (catch the class, not the message); a request that got no answer
 * at all is an APIConnectionError. Each carries what the gateway said: the HTTP status, its
 * `{"error": "…"}` message and the request id, when the gateway sent one.
 */

/** The base of every error thrown for an HTTP answer or a failed connection. */
export class GatewayError extends Error {
  override name = 'GatewayError';
  /** The HTTP status; undefined when no answer came (APIConnectionError). */
  readonly status: number | undefined;
  /** The request id the gateway sent (`X-Request-Id`), when it sent one. */
  readonly requestId: string | undefined;
  /** The response headers (lower-case names); empty without an answer. */
  readonly headers: Record<string, string>;
  /** The parsed JSON body (usually `{error}`), or the raw text when it was not JSON. */
  readonly body: unknown;

  constructor(message: string, params: { status?: number; requestId?: string; headers?: Record<string, string>; body?: unknown; cause?: unknown } = {}) {
    super(message, params.cause === undefined ? undefined : { cause: params.cause });
    this.status = params.status;
    this.requestId = params.requestId;
    this.headers = params.headers ?? {};
    this.body = params.body;
  }
}

/** 400: the request is malformed or a field is invalid; the message says which. */
export class BadRequestError extends GatewayError {
  override name = 'BadRequestError';
}
/** 401: the API key is missing, unknown or revoked. */
export class AuthenticationError extends GatewayError {
  override name = 'AuthenticationError';
}
/** 403: the key may not do this (a read-only key writing, a test key on a live-only route). */
export class PermissionDeniedError extends GatewayError {
  override name = 'PermissionDeniedError';
}
/** 404: no such object for this key's account and mode. */
export class NotFoundError extends GatewayError {
  override name = 'NotFoundError';
}
/** 409: the request conflicts with the object's state (or an idempotent request still running after every retry). */
export class ConflictError extends GatewayError {
  override name = 'ConflictError';
}
/** 422: well-formed but refused, e.g. an Idempotency-Key reused with a different request. */
export class UnprocessableEntityError extends GatewayError {
  override name = 'UnprocessableEntityError';
}
/** 429: rate limited; `retryAfterSeconds` is the gateway's Retry-After. */
export class RateLimitError extends GatewayError {
  override name = 'RateLimitError';
  get retryAfterSeconds(): number | undefined {
    const value = Number(this.headers['retry-after']);
    return Number.isFinite(value) ? value : undefined;
  }
}
/** 5xx: the gateway failed or is unavailable (503 while its database is unreachable). */
export class ServerError extends GatewayError {
  override name = 'ServerError';
}
/** No answer: the connection failed, was reset or timed out. `cause` holds the underlying error. */
export class APIConnectionError extends GatewayError {
  override name = 'APIConnectionError';
}

const BY_STATUS: Record<number, typeof GatewayError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** The error for a non-2xx answer: the class of its status, the gateway's `error` text as message. */
export function errorFromResponse(status: number, headers: Record<string, string>, body: unknown): GatewayError {
  const given =
    body !== null && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : undefined;
  const message = given ?? (typeof body === 'string' && body.length > 0 ? body.slice(0, 500) : `HTTP ${status}`);
  const ErrorClass = BY_STATUS[status] ?? (status >= 500 ? ServerError : GatewayError);
  const requestId = headers['x-request-id'] ?? headers['request-id'];
  return new ErrorClass(message, { status, headers, body, ...(requestId ? { requestId } : {}) });
}

/**
 * One error base for the whole daemon (after viem's `BaseError`): a short message for people,
 * optional details, the cause chain, and a class that tells workers whether to retry and the
 * HTTP layer which status to answer. Nobody decides anything from an error's text, name or code:
 * callers test the class. Most errors are a {@link RetryableError} or a {@link NonRetryableError};
 * a kind that is neither extends this base directly and says in its own doc what to do (the
 * ingesters' `LeadershipLostError`: stop and stand by, which is no failure at all).
 */
export class BaseError extends Error {
  override name = 'BaseError';
  readonly shortMessage: string;
  readonly details: string | undefined;

  constructor(shortMessage: string, options: { cause?: unknown; details?: string } = {}) {
    super(options.details ? `${shortMessage}\n\nDetails: ${options.details}` : shortMessage, {
      cause: options.cause,
    });
    this.shortMessage = shortMessage;
    this.details = options.details;
  }

  /** The first error in the cause chain for which `predicate` holds, or the last one. */
  walk(predicate?: (error: unknown) => boolean): unknown {
    let current: unknown = this;
    while (current instanceof Error) {
      if (predicate?.(current)) return current;
      if (!current.cause) return predicate ? undefined : current;
      current = current.cause;
    }
    return predicate ? undefined : current;
  }
}

/** A failure worth trying again: a timeout, a dropped connection, a 5xx from a provider. */
export class RetryableError extends BaseError {
  override name = 'RetryableError';
}

/** A failure that will fail the same way every time: retrying only wastes work. */
export class NonRetryableError extends BaseError {
  override name = 'NonRetryableError';
}

/** A bad configuration value; `problems` names each variable and what is wrong with it. */
export class ConfigError extends NonRetryableError {
  override name = 'ConfigError';
  readonly problems: string[];

  constructor(problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
  }
}

// The refusals domain code throws when a request cannot be done as asked. Each says what went
// wrong for the caller in `shortMessage` and nothing about HTTP: src/api/httpErrors.ts maps each
// class to its status and headers, in one table. Anything else that reaches the HTTP layer is a
// bug (a logged 500) or an outage (a 503). None is retryable: the same request fails the same way.

/** The input is wrong (a field, a format, an amount with too many decimals): the caller must change it. */
export class InvalidRequestError extends NonRetryableError {
  override name = 'InvalidRequestError';
}

/** The challenge RFC 6750 asks for with a 401 (Interface A's scheme is Bearer; Interface B's X-API-Key header is accepted too). */
export const BEARER_CHALLENGE = 'Bearer realm="svc"';

/** No valid credentials came with the request; `challenge` tells the client how to authenticate. */
export class UnauthenticatedError extends NonRetryableError {
  override name = 'UnauthenticatedError';
  readonly challenge: string;

  constructor(shortMessage: string, options: { challenge?: string; cause?: unknown } = {}) {
    super(shortMessage, { cause: options.cause });
    this.challenge = options.challenge ?? BEARER_CHALLENGE;
  }
}

/** The caller is known but may not do this (a read-only key writing, a live key on a sandbox route). */
export class PermissionError extends NonRetryableError {
  override name = 'PermissionError';
}

/** The resource named does not exist, or not for this caller (whose other merchants' ids name nothing). */
export class NotFoundError extends NonRetryableError {
  override name = 'NotFoundError';
}

/** The request is valid but the resource's state refuses it (already settled, already open, a cap reached). */
export class ConflictError extends NonRetryableError {
  override name = 'ConflictError';
}

/** The resource existed and is permanently out of service (a deactivated payment link). */
export class GoneError extends NonRetryableError {
  override name = 'GoneError';
}

/** Well-formed and consistent, yet not acceptable as sent (an Idempotency-Key reused for a different request). */
export class UnprocessableError extends NonRetryableError {
  override name = 'UnprocessableError';
}

/**
 * Too many requests of one kind, or too many of something per resource (refund requests per
 * payment). Like every refusal it is not retryable as it stands: asking again at once gets the same
 * answer. `retryAfterSeconds` says when a retry may pass, when there is such a time; `limit` is the
 * number allowed per window, for the request limits that have one (per IP, per key).
 */
export class RateLimitedError extends NonRetryableError {
  override name = 'RateLimitedError';
  readonly retryAfterSeconds: number | undefined;
  readonly limit: number | undefined;

  constructor(shortMessage: string, options: { retryAfterSeconds?: number; limit?: number; cause?: unknown } = {}) {
    super(shortMessage, { cause: options.cause });
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.limit = options.limit;
  }
}

/** A feature this process does not run (the sandbox routes without the sandbox): asking this process again does not help. */
export class UnavailableError extends NonRetryableError {
  override name = 'UnavailableError';
}

/** 400: {@link InvalidRequestError}. The factories keep call sites short and read as the answer they produce. */
export const badRequest = (message: string) => new InvalidRequestError(message);
/** 401: {@link UnauthenticatedError} with the Bearer challenge. */
export const unauthorized = (message: string) => new UnauthenticatedError(message);
/** 403: {@link PermissionError}. */
export const forbidden = (message: string) => new PermissionError(message);
/** 404: {@link NotFoundError}. */
export const notFound = (message: string) => new NotFoundError(message);
/** 409: {@link ConflictError}. */
export const conflict = (message: string) => new ConflictError(message);
/** 422: {@link UnprocessableError}. */
export const unprocessable = (message: string) => new UnprocessableError(message);

/**
 * The first error of the cause chain that starts at `error` (itself included) that is an instance
 * of `Class`: {@link BaseError.walk} for errors that are not ours at the top (undici and pg wrap
 * ours as their `cause`).
 */
export function findCause<T extends Error>(error: unknown, Class: abstract new (...args: never[]) => T): T | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 10; current = current.cause, depth++) {
    if (current instanceof Class) return current;
  }
  return undefined;
}

/** Node's file-system error for an exclusive create (`flag: 'wx'`) that found the file there: another process won the race. */
export function isFileExistsError(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === 'EEXIST';
}

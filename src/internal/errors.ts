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

/**
 * An error the HTTP layer shows to the client as `{"error": message}` with `status`. Anything
 * else that reaches the HTTP layer is a bug and becomes a logged 500.
 */
export class HttpError extends NonRetryableError {
  override name = 'HttpError';
  readonly status: number;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = status;
    this.headers = options.headers ?? {};
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
/** 401 with the challenge RFC 6750 asks for (Interface A's scheme is Bearer; Interface B's X-API-Key header is accepted too). */
export const unauthorized = (message: string) => new HttpError(401, message, { headers: { 'WWW-Authenticate': 'Bearer realm="svc"' } });
export const forbidden = (message: string) => new HttpError(403, message);
export const notFound = (message: string) => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
export const unprocessable = (message: string) => new HttpError(422, message);

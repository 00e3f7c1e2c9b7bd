import {
  type BaseError,
  ConflictError,
  GoneError,
  InvalidRequestError,
  NotFoundError,
  PermissionError,
  RateLimitedError,
  UnauthenticatedError,
  UnavailableError,
  UnprocessableError,
} from '../internal/errors.ts';
import { CommitOutcomeUnknownError, isDatabaseUnavailable } from '../store/index.ts';

/** What the HTTP layer sends for an error: its status, extra headers and the `{"error"}` body. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: { error: string };
}

/** An {@link ErrorAnswer} and, for errors that are not the client's doing, the log line it deserves. */
export interface HandledError extends ErrorAnswer {
  log?: { level: 'warn' | 'error'; msg: string };
}

type RefusalClass = abstract new (...args: never[]) => BaseError;

/**
 * The status of each refusal that domain code throws (spec §7): the one place where an error
 * class becomes an HTTP status. The first class an error is an instance of wins, so a subclass
 * (TooManyEndpointsError is a ConflictError) takes its base's status unless listed before it.
 */
export const REFUSAL_STATUS: ReadonlyArray<readonly [RefusalClass, number]> = [
  [InvalidRequestError, 400],
  [UnauthenticatedError, 401],
  [PermissionError, 403],
  [NotFoundError, 404],
  [ConflictError, 409],
  [GoneError, 410],
  [UnprocessableError, 422],
  [RateLimitedError, 429],
  [UnavailableError, 503],
];

/** Seconds a client should wait before retrying while the database is unavailable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The headers a refusal carries: a 401's challenge (RFC 6750), a 429's wait and, for request limits, the budget (IETF RateLimit fields). */
function refusalHeaders(error: BaseError): Record<string, string> {
  if (error instanceof UnauthenticatedError) return { 'WWW-Authenticate': error.challenge };
  if (!(error instanceof RateLimitedError) || error.retryAfterSeconds === undefined) return {};
  const retryAfter = String(error.retryAfterSeconds);
  if (error.limit === undefined) return { 'Retry-After': retryAfter };
  return { 'Retry-After': retryAfter, 'RateLimit-Limit': String(error.limit), 'RateLimit-Remaining': '0', 'RateLimit-Reset': retryAfter };
}

/** The answer to a refusal (a class of {@link REFUSAL_STATUS}), or `undefined` for any other error. */
export function refusalAnswer(error: unknown): ErrorAnswer | undefined {
  const status = REFUSAL_STATUS.find(([Class]) => error instanceof Class)?.[1];
  if (status === undefined) return undefined;
  const refusal = error as BaseError;
  return { status, headers: refusalHeaders(refusal), body: { error: refusal.shortMessage } };
}

/**
 * A client error fastify raised itself (body parsing, a malformed request): its 4xx answer, or
 * `undefined`. The only place that reads fastify's error codes: the issue asks for 400, not
 * fastify's 413 and 415, for an oversized body and a wrong content type.
 */
function fastifyAnswer(error: unknown, bodyLimitBytes: number): ErrorAnswer | undefined {
  const { code, statusCode, message = 'bad request' } = (error ?? {}) as { code?: string; statusCode?: number; message?: string };
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { status: 400, headers: {}, body: { error: `request body is larger than ${bodyLimitBytes} bytes` } };
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') return { status: 400, headers: {}, body: { error: message } };
  if (statusCode && statusCode >= 400 && statusCode < 500) return { status: statusCode, headers: {}, body: { error: message } };
  return undefined;
}

/**
 * The 4xx status of an error fastify raised itself while reading a request (413 an oversized
 * body, 415 a content type with no parser, 400 a malformed one), or `undefined`. For the
 * dashboard, whose pages answer with fastify's own statuses; the API's answers are
 * {@link errorAnswer}'s (400 for the first two, as the issue asks).
 */
export function requestReadingStatus(error: unknown): number | undefined {
  const { code, statusCode } = (error ?? {}) as { code?: string; statusCode?: number };
  if (typeof code !== 'string' || !code.startsWith('FST_')) return undefined;
  return statusCode && statusCode >= 400 && statusCode < 500 ? statusCode : undefined;
}

/**
 * The answer to any error that reaches the HTTP layer (the fastify error handler's whole logic):
 * a refusal gets its class's status; an error fastify raised for the request its 4xx; a commit
 * whose outcome is unknown a 500 that says so (not a 503: a retry without an Idempotency-Key
 * could apply the change twice); an unreachable database a 503 with Retry-After; anything else
 * is a bug, a logged 500 that shows nothing of it.
 */
export function errorAnswer(error: unknown, params: { bodyLimitBytes: number }): HandledError {
  const answer = refusalAnswer(error) ?? fastifyAnswer(error, params.bodyLimitBytes);
  if (answer) return answer;
  if (error instanceof CommitOutcomeUnknownError) {
    return {
      status: 500,
      headers: {},
      body: {
        error:
          'the database did not confirm this change in time: it may have been applied. Retry with the same Idempotency-Key (which returns the first answer if it was), or read the resource before retrying',
      },
      log: { level: 'error', msg: 'Commit outcome unknown' },
    };
  }
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
      body: { error: 'the service is temporarily unavailable (database unreachable); retry later' },
      log: { level: 'warn', msg: 'Database unavailable' },
    };
  }
  return { status: 500, headers: {}, body: { error: 'internal server error' }, log: { level: 'error', msg: 'Unhandled error in request' } };
}

/** fastify's `frameworkErrors` (before routing, an undecodable URL): its 4xx status, else 400, with its message. */
export function frameworkErrorAnswer(error: { statusCode?: number; message: string }): ErrorAnswer {
  const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 400;
  return { status, headers: {}, body: { error: error.message } };
}

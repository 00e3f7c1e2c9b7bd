import { describe, expect, test } from 'vitest';
import { errorCodes } from 'fastify';
import { BODY_LIMIT_BYTES } from '../../src/api/index.ts';
import { errorAnswer, frameworkErrorAnswer, refusalAnswer, REFUSAL_STATUS } from '../../src/api/httpErrors.ts';
import {
  BEARER_CHALLENGE,
  badRequest,
  conflict,
  ConflictError,
  forbidden,
  GoneError,
  InvalidRequestError,
  notFound,
  NotFoundError,
  PermissionError,
  RateLimitedError,
  unauthorized,
  UnauthenticatedError,
  UnavailableError,
  unprocessable,
  UnprocessableError,
} from '../../src/internal/errors.ts';
import { CommitOutcomeUnknownError, DatabaseTimeoutError } from '../../src/store/index.ts';
import { TooManyEndpointsError } from '../../src/delivery/endpoints.ts';
import { setDefaultWallet } from '../../src/accounts/wallets.ts';
import { newId } from '../../src/internal/crypto.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { bearer, buildApi, newMerchant } from '../helpers/api.ts';

const answer = (error: unknown) => errorAnswer(error, { bodyLimitBytes: BODY_LIMIT_BYTES });

describe('refusalAnswer(): the one table from error class to HTTP status', () => {
  test('each refusal class answers its status and {"error": shortMessage}, with no details', () => {
    const cases: [Error, number][] = [
      [new InvalidRequestError('amount must be decimal text', { details: 'not for clients' }), 400],
      [new UnauthenticatedError('invalid API key'), 401],
      [new PermissionError('this API key lacks the "write" scope'), 403],
      [new NotFoundError('payment session ses_x not found'), 404],
      [new ConflictError('the session is already paid'), 409],
      [new GoneError('this payment link is no longer active'), 410],
      [new UnprocessableError('Idempotency-Key reused with another body'), 422],
      [new RateLimitedError('at most 3 refund requests'), 429],
      [new UnavailableError('the sandbox is not running in this process'), 503],
    ];
    expect(cases.map(([error]) => error.constructor)).toEqual(REFUSAL_STATUS.map(([Class]) => Class));
    for (const [error, status] of cases) {
      const shortMessage = error.message.split('\n')[0];
      expect(refusalAnswer(error), error.name).toMatchObject({ status, body: { error: shortMessage } });
      expect(answer(error).log, error.name).toBeUndefined();
    }
  });

  test('the factories call sites use return the refusal classes', () => {
    expect(badRequest('x')).toBeInstanceOf(InvalidRequestError);
    expect(unauthorized('x')).toBeInstanceOf(UnauthenticatedError);
    expect(forbidden('x')).toBeInstanceOf(PermissionError);
    expect(notFound('x')).toBeInstanceOf(NotFoundError);
    expect(conflict('x')).toBeInstanceOf(ConflictError);
    expect(unprocessable('x')).toBeInstanceOf(UnprocessableError);
  });

  test('headers: a 401 carries its challenge; a 429 its wait and, for request limits, the budget', () => {
    expect(refusalAnswer(unauthorized('missing API key'))).toEqual({
      status: 401,
      headers: { 'WWW-Authenticate': BEARER_CHALLENGE },
      body: { error: 'missing API key' },
    });
    expect(refusalAnswer(new UnauthenticatedError('x', { challenge: 'Basic' }))?.headers).toEqual({ 'WWW-Authenticate': 'Basic' });
    expect(refusalAnswer(new RateLimitedError('at most 3'))?.headers).toEqual({});
    expect(refusalAnswer(new RateLimitedError('busy', { retryAfterSeconds: 60 }))?.headers).toEqual({ 'Retry-After': '60' });
    expect(refusalAnswer(new RateLimitedError('limit', { retryAfterSeconds: 12, limit: 100 }))?.headers).toEqual({
      'Retry-After': '12',
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '12',
    });
    expect(refusalAnswer(badRequest('x'))?.headers).toEqual({});
  });

  test('a subclass takes its base class status: too many webhook endpoints is a 409', () => {
    expect(refusalAnswer(new TooManyEndpointsError(true))).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining('16 live webhook endpoints') },
    });
  });

  test('nothing is decided from a name, code or message: look-alikes of other classes are bugs (500)', () => {
    const namedLikeRefusal = Object.assign(new Error('payment session ses_x not found'), { name: 'NotFoundError' });
    const codedLikeCommit = Object.assign(new Error('the database did not confirm the commit'), { code: 'SVC_COMMIT_UNKNOWN' });
    for (const error of [namedLikeRefusal, codedLikeCommit, new Error('boom'), 'a string', undefined]) {
      expect(refusalAnswer(error)).toBeUndefined();
      expect(answer(error)).toEqual({
        status: 500,
        headers: {},
        body: { error: 'internal server error' },
        log: { level: 'error', msg: 'Unhandled error in request' },
      });
    }
  });
});

describe('errorAnswer(): everything else that reaches the HTTP layer', () => {
  test('fastify body errors are 400s; its other client errors keep their 4xx status', () => {
    expect(answer(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE())).toEqual({
      status: 400,
      headers: {},
      body: { error: `request body is larger than ${BODY_LIMIT_BYTES} bytes` },
    });
    const mediaType = new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE('text/csv');
    expect(answer(mediaType)).toEqual({ status: 400, headers: {}, body: { error: mediaType.message } });
    const contentLength = new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH();
    expect(answer(contentLength)).toEqual({ status: 400, headers: {}, body: { error: contentLength.message } });
    const emptyJson = new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY();
    expect(answer(emptyJson)).toEqual({ status: 400, headers: {}, body: { error: emptyJson.message } });
  });

  test('a commit with an unknown outcome is a logged 500 that says so, not a 503', () => {
    const error = new CommitOutcomeUnknownError('the database did not confirm the commit in time', { cause: new DatabaseTimeoutError('no answer') });
    expect(answer(error)).toMatchObject({ status: 500, headers: {}, log: { level: 'error', msg: 'Commit outcome unknown' } });
    expect(answer(error).body.error).toMatch(
      /^the database did not confirm this change in time: it may have been applied\. Retry with the same Idempotency-Key/,
    );
  });

  test('an unreachable or frozen database is a 503 with Retry-After', () => {
    const expected = {
      status: 503,
      headers: { 'Retry-After': '5' },
      body: { error: 'the service is temporarily unavailable (database unreachable); retry later' },
      log: { level: 'warn', msg: 'Database unavailable' },
    };
    expect(answer(new DatabaseTimeoutError('the database did not answer within 500 ms'))).toEqual(expected);
    expect(answer(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toEqual(expected);
  });

  test("frameworkErrors: a 4xx keeps its status, anything else is a 400, with fastify's message", () => {
    expect(frameworkErrorAnswer(new errorCodes.FST_ERR_BAD_URL('/%zz'))).toEqual({
      status: 400,
      headers: {},
      body: { error: "'/%zz' is not a valid url component" },
    });
    expect(frameworkErrorAnswer({ statusCode: 500, message: 'odd' })).toEqual({ status: 400, headers: {}, body: { error: 'odd' } });
  });
});

describe('a domain refusal reaches the client', () => {
  const db = useTestDatabase('http_errors');

  test('setDefaultWallet() throws NotFoundError for an unknown wallet; the API answers 404 {"error"} with its message', async () => {
    const merchant = await newMerchant(db.store);
    const walletId = newId('wal');
    const thrown = await setDefaultWallet(db.store, { merchantId: merchant.id, walletId }).catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(NotFoundError);
    expect((thrown as NotFoundError).shortMessage).toBe(`wallet ${walletId} not found`);

    const app = buildApi(db.store);
    try {
      const response = await app.inject({ method: 'POST', url: `/api/v1/wallets/${walletId}/default`, headers: bearer(merchant.live) });
      expect(response.statusCode).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toBe(JSON.stringify({ error: `wallet ${walletId} not found` }));
    } finally {
      await app.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, newMerchant, WALLET } from '../helpers/api.ts';

/**
 * Property: whatever arrives (malformed bodies, headers, paths), the API answers with a status
 * below 500 and a JSON `{"error"}` on failure, and writes a row only when it answers 2xx.
 */
const db = useTestDatabase('api_fuzz');
let app: ReturnType<typeof buildApi>;
let keys: Awaited<ReturnType<typeof newMerchant>>;
let paymentId: string;
let linkId: string;

beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
  keys = await newMerchant(db.store);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/payments',
    headers: { 'x-api-key': keys.test },
    payload: { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET },
  });
  paymentId = created.json().id;
  const link = await app.inject({
    method: 'POST',
    url: '/api/v1/payment-links',
    headers: { 'x-api-key': keys.test },
    payload: { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET },
  });
  linkId = link.json().id;
});
afterAll(() => app.close());

const TABLES = ['payment_sessions', 'payment_links', 'refunds', 'idempotency_keys', 'wallets', 'wallet_challenges', 'events', 'webhook_endpoints'];
let countSql = '';

/** Rows in every table a request could write, in one round trip. */
async function rowCount(): Promise<number> {
  if (!countSql) {
    const { rows } = await db.store.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name = ANY($1)`,
      [TABLES],
    );
    countSql = `SELECT ${rows.map((row) => `(SELECT count(*) FROM ${row.table_name})`).join(' + ')} AS n`;
  }
  const { rows } = await db.store.query<{ n: bigint }>(countSql);
  return Number(rows[0]!.n);
}

let checked = 0;
async function expectSafe(request: { method: string; url: string; headers?: Record<string, string>; payload?: string }) {
  const before = await rowCount();
  const response = await app.inject(request as InjectOptions);
  checked++;
  if (response.statusCode >= 500) throw new Error(`${response.statusCode} for ${JSON.stringify(request).slice(0, 500)}: ${response.body}`);
  if (response.statusCode >= 400) {
    if (request.method !== 'HEAD') expect(response.json()).toEqual({ error: expect.any(String) });
    const after = await rowCount();
    if (after !== before) throw new Error(`a ${response.statusCode} wrote ${after - before} rows: ${JSON.stringify(request).slice(0, 500)}`);
  }
  return response;
}

const POSTS = ['/sessions', '/payments', '/checkout/sessions', '/payment-links', '/refunds', '/wallets', '/wallets/challenges'];
const FIELDS = [
  'amount',
  'currency',
  'chain',
  'merchantWallet',
  'metadata',
  'webhookUrl',
  'successUrl',
  'expiresIn',
  'paymentId',
  'address',
  'txHash',
  'active',
  'challengeId',
  'signature',
  'reason',
  '__proto__',
  'constructor',
];
const validBody = { amount: '5', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET };

const nastyString = fc.oneof(
  fc.string(),
  fc.constantFrom(
    '',
    ' ',
    '-1',
    '0',
    '0.0',
    '1e9',
    '1.',
    '.5',
    '01',
    '1,5',
    'NaN',
    'Infinity',
    '9'.repeat(90),
    '0.0000001',
    'USDC',
    'usdc',
    'polygon ',
    WALLET.toLowerCase(),
    `${WALLET}00`,
    'javascript:alert(1)',
    'http://',
    '//x',
    '\u0000',
    '💸',
    "'; DROP TABLE payment_sessions; --",
  ),
);
const nastyValue = fc.oneof(
  nastyString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer())),
);

/** A body that is almost valid: one to three fields replaced with nasty values, or unknown fields added. */
const mutatedBody = fc
  .tuple(fc.array(fc.tuple(fc.constantFrom(...FIELDS), nastyValue), { minLength: 1, maxLength: 3 }), fc.boolean())
  .map(([changes, startValid]) => {
    const body: Record<string, unknown> = startValid ? { ...validBody } : {};
    for (const [field, value] of changes) Object.defineProperty(body, field, { value, enumerable: true, configurable: true, writable: true });
    return body;
  });

describe('fuzz: no 500, no crash, no row written on failure', () => {
  test('thousands of malformed JSON bodies on every POST', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POSTS),
        fc.constantFrom('/api/v1', '/v1'),
        fc.oneof(mutatedBody, fc.jsonValue()),
        fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
        async (path, prefix, body, idempotencyKey) => {
          // Wallets are managed with a live key only (a test key gets 403 before its body is read).
          const headers: Record<string, string> = { 'x-api-key': path.startsWith('/wallets') ? keys.live : keys.test, 'content-type': 'application/json' };
          if (idempotencyKey !== undefined && /^[\x20-\x7e]*$/.test(idempotencyKey)) headers['idempotency-key'] = idempotencyKey;
          await expectSafe({ method: 'POST', url: `${prefix}${path}`, headers, payload: JSON.stringify(body) ?? 'null' });
        },
      ),
      { numRuns: 800 },
    );
  });

  test('raw bytes and wrong content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...POSTS),
        fc.oneof(
          fc.string(),
          fc.constantFrom(
            '{',
            '{"amount":',
            '[]',
            'null',
            '"x"',
            '{"a":1}{"b":2}',
            '\ufeff{}',
            '{"__proto__":{"admin":true}}',
            '{"constructor":{"prototype":{"x":1}}}',
          ),
        ),
        fc.constantFrom(
          'application/json',
          'application/json; charset=utf-8',
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/octet-stream',
          'APPLICATION/JSON',
          'application/json; charset=latin1',
          '',
        ),
        async (path, payload, contentType) => {
          const headers: Record<string, string> = { authorization: `Bearer ${path.startsWith('/wallets') ? keys.live : keys.test}` };
          if (contentType) headers['content-type'] = contentType;
          await expectSafe({ method: 'POST', url: `/api/v1${path}`, headers, payload });
        },
      ),
      { numRuns: 400 },
    );
  });

  test('malformed paths, query strings and methods', async () => {
    const segment = fc.oneof(
      fc.string({ maxLength: 30 }).map(encodeURIComponent),
      fc.constantFrom('ses_', '..', '%00', '%ZZ', paymentId, linkId, 'rfd_x', 'a'.repeat(300), '%2F', '?', '#'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS'),
        fc.constantFrom(
          '/api/v1/sessions/',
          '/api/v1/payments/',
          '/v1/payments',
          '/api/v1/payment-links/',
          '/api/v1/refunds/',
          '/pay/',
          '/api/v1/',
          '/',
          '/api/v1/refunds?paymentId=',
          '/api/v1/payments?',
        ),
        fc.array(segment, { maxLength: 3 }),
        fc.dictionary(
          fc.constantFrom('limit', 'startingAfter', 'status', 'chain', 'currency', 'createdGte', 'createdLt', 'active', 'x'),
          nastyString.map(String),
          { maxKeys: 3 },
        ),
        async (method, base, segments, query) => {
          const search = new URLSearchParams(query).toString();
          const url = `${base}${segments.join('/')}${search ? `${base.includes('?') ? '&' : '?'}${search}` : ''}`;
          const response = await expectSafe({ method: method as 'GET', url, headers: { 'x-api-key': keys.test } });
          // Public link visits may legitimately create a session (303); every other non-2xx wrote nothing.
          expect(response.statusCode).toBeGreaterThanOrEqual(200);
        },
      ),
      { numRuns: 500 },
    );
  });

  test('malformed authentication and idempotency headers', async () => {
    const headerValue = fc.string({ maxLength: 300 }).filter((text) => /^[\x20-\x7e]*$/.test(text));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          authorization: fc.option(
            fc.oneof(
              headerValue,
              headerValue.map((text) => `Bearer ${text}`),
              fc.constant(`Bearer ${keys.test} extra`),
              fc.constant(`bearer ${keys.readOnly}`),
            ),
            { nil: undefined },
          ),
          'x-api-key': fc.option(fc.oneof(headerValue, fc.constant(keys.live), fc.constant(`${keys.test} `)), { nil: undefined }),
          'idempotency-key': fc.option(headerValue, { nil: undefined }),
        }),
        fc.constantFrom('/api/v1/payments', '/v1/sessions', '/api/v1/refunds'),
        async (rawHeaders, path) => {
          const headers = Object.fromEntries(Object.entries(rawHeaders).filter(([, value]) => value !== undefined)) as Record<string, string>;
          await expectSafe({
            method: 'POST',
            url: path,
            headers: { ...headers, 'content-type': 'application/json' },
            payload: JSON.stringify({ ...validBody, amount: 'bad' }),
          });
        },
      ),
      { numRuns: 300 },
    );
    // Still alive and correct afterwards.
    const health = await app.inject({ method: 'GET', url: '/api/v1/health' });
    expect(health.statusCode).toBe(200);
    expect(checked).toBeGreaterThanOrEqual(2000);
  });
});

describe('edge values found in review', () => {
  test('out-of-range transfer ids and year-0 dates are 4xx, not 500', async () => {
    const { buildApi: build, newMerchant: merchant } = await import('../helpers/api.ts');
    const app = build(db.store);
    await app.ready();
    try {
      const m = await merchant(db.store);
      const auth = { authorization: `Bearer ${m.live}` };
      const big = 'trf_9999999999999999999';
      for (const request of [
        { method: 'GET' as const, url: `/api/v1/transfers/unmatched?startingAfter=${big}` },
        { method: 'POST' as const, url: `/api/v1/transfers/${big}/attribution`, payload: { sessionId: 'ses_x' } },
        { method: 'GET' as const, url: '/api/v1/payments?createdGte=0000-01-01T00:00:00Z' },
        { method: 'GET' as const, url: '/api/v1/payments?createdLt=0000-01-01T00:00:00Z' },
      ]) {
        const response = await app.inject({ ...request, headers: auth });
        expect([400, 404], `${request.method} ${request.url}`).toContain(response.statusCode);
        expect(response.json()).toHaveProperty('error');
      }
    } finally {
      await app.close();
    }
  });
});

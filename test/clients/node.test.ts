import fs from 'node:fs';
import { afterEach, describe, expect, test } from 'vitest';
import {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  computeSignature,
  ConflictError,
  createGatewayClient,
  createMemoryNonceCache,
  DEFAULT_BASE_URL,
  GatewayError,
  IN_FLIGHT_MESSAGE,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  UnprocessableEntityError,
  VERSION,
  verifyWebhook,
  constructWebhookEvent,
  type RetryEvent,
} from '../../clients/node/src/index.ts';
import { buildModel } from '../../clients/scripts/model.ts';
import { startScriptedServer, type Script, type Seen } from '../helpers/scriptedServer.ts';

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(script: (request: Seen, index: number) => Script) {
  const server = await startScriptedServer(script);
  servers.push(server);
  return server;
}

/** A client whose backoff waits 1 ms, so retry tests take no time unless a Retry-After says so. */
function client(baseUrl: string, options: Partial<Parameters<typeof createGatewayClient>[0]> = {}) {
  return createGatewayClient({ apiKey: 'svc_test_key', baseUrl, retryBackoff: { initialMs: 1, maxMs: 1 }, ...options });
}

const PAYMENT = { id: 'ses_1', status: 'pending' };

describe('authentication and requests', () => {
  test('the key goes as Bearer by default and as X-API-Key when asked; the default base URL is the local gateway under /api/v1', async () => {
    expect(DEFAULT_BASE_URL).toBe('http://127.0.0.1:8080/api/v1');
    const server = await serve(() => ({ status: 200, json: PAYMENT }));
    await client(server.url).payments.retrieve('ses_1');
    await client(server.url, { authHeader: 'x-api-key' }).payments.retrieve('ses_1');
    expect(server.seen.map((request) => [request.url, request.headers.authorization, request.headers['x-api-key']])).toEqual([
      ['/api/v1/payments/ses_1', 'Bearer svc_test_key', undefined],
      ['/api/v1/payments/ses_1', undefined, 'svc_test_key'],
    ]);
    expect(server.seen[0]!.headers['user-agent']).toBe(`svc-gateway-node/${VERSION}`);
    expect(VERSION).toBe(JSON.parse(fs.readFileSync('clients/node/package.json', 'utf8')).version);
  });

  test('attribution goes in the create body as given; depositAddress and attribution come back typed (issue 25)', async () => {
    const server = await serve(() => ({ status: 201, json: { ...PAYMENT, attribution: 'address', depositAddress: '0xD3p0', paymentAddress: '0xD3p0' } }));
    const created = await client(server.url).payments.create({ amount: '25', currency: 'USDC', chain: 'base', attribution: 'address' });
    const typed: { attribution: 'amount' | 'address' | null; depositAddress: string | null } = created;
    expect(typed).toMatchObject({ attribution: 'address', depositAddress: '0xD3p0' });
    expect(JSON.parse(server.seen[0]!.body)).toEqual({ amount: '25', currency: 'USDC', chain: 'base', attribution: 'address' });
  });

  test('path parameters are escaped; query values go as text, unset ones are left out; bodies are JSON', async () => {
    const server = await serve(() => ({ status: 200, json: { data: [], hasMore: false, nextCursor: null } }));
    await client(server.url).paymentLinks.list({ active: false, limit: 5, startingAfter: undefined });
    await client(server.url).request({ method: 'GET', path: `/payments/${encodeURIComponent('a/b c')}` });
    const refund = await serve(() => ({ status: 200, json: { id: 'rf_1' } }));
    await client(refund.url).refunds.complete('rf/1', { txHash: '0xabc' });
    expect(server.seen.map((request) => request.url)).toEqual(['/api/v1/payment-links?active=false&limit=5', '/api/v1/payments/a%2Fb%20c']);
    expect(refund.seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/refunds/rf%2F1/complete', body: '{"txHash":"0xabc"}' });
    expect(refund.seen[0]!.headers['content-type']).toBe('application/json');
  });

  test('every operation of the OpenAPI snapshot has a method on the client', () => {
    const document = JSON.parse(fs.readFileSync('clients/openapi.json', 'utf8'));
    const model = buildModel(document);
    const gateway = client('http://127.0.0.1:1/api/v1') as unknown as Record<string, Record<string, unknown>>;
    const methods = model.resources.flatMap((resource) => resource.operations.map((operation) => `${resource.name}.${operation.method}`));
    const documented = Object.entries(document.paths as Record<string, object>)
      .filter(([path]) => path.startsWith('/api/v1/'))
      .flatMap(([, operations]) => Object.keys(operations));
    expect(methods).toHaveLength(documented.length);
    expect(methods.filter((name) => typeof gateway[name.split('.')[0]!]?.[name.split('.')[1]!] !== 'function')).toEqual([]);
  });
});

describe('idempotency and retries', () => {
  test('a POST keeps one Idempotency-Key across its retries; the next call gets a new one; a given key is sent as is', async () => {
    const server = await serve((_request, index) => (index < 2 ? { status: 503, json: { error: 'unavailable' } } : { status: 201, json: PAYMENT }));
    const gateway = client(server.url);
    await expect(gateway.payments.create({ amount: '25', currency: 'USDC', chain: 'base' })).resolves.toEqual(PAYMENT);
    await gateway.payments.create({ amount: '25', currency: 'USDC', chain: 'base' });
    await gateway.payments.create({ amount: '25', currency: 'USDC', chain: 'base' }, { idempotencyKey: 'order-42' });
    const keys = server.seen.map((request) => request.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys.slice(0, 3)).toEqual([keys[0], keys[0], keys[0]]);
    expect(keys[3]).not.toBe(keys[0]);
    expect(keys[4]).toBe('order-42');
    expect(server.seen.every((request) => request.body === '{"amount":"25","currency":"USDC","chain":"base"}')).toBe(true);
    // GETs carry no key.
    await gateway.payments.retrieve('ses_1');
    expect(server.seen.at(-1)!.headers['idempotency-key']).toBeUndefined();
  });

  test('retries a dropped connection, a timeout, the in-flight 409 and 5xx; not a 400 or another 409', async () => {
    const answers: Script[] = [
      'reset',
      'hang',
      { status: 409, json: { error: `${IN_FLIGHT_MESSAGE}; retry shortly` } },
      { status: 502, json: { error: 'bad gateway' } },
      { status: 200, json: PAYMENT },
    ];
    const server = await serve((_request, index) => answers[index] ?? { status: 500 });
    const retries: RetryEvent[] = [];
    const gateway = client(server.url, { maxRetries: 4, timeoutMs: 200, onRetry: (event) => retries.push(event) });
    await expect(gateway.refunds.create({ paymentId: 'ses_1' })).resolves.toEqual(PAYMENT);
    expect(retries.map((event) => [event.attempt, event.error.name, event.error.status])).toEqual([
      [1, 'APIConnectionError', undefined],
      [2, 'APIConnectionError', undefined],
      [3, 'ConflictError', 409],
      [4, 'ServerError', 502],
    ]);
    expect(new Set(server.seen.map((request) => request.headers['idempotency-key'])).size).toBe(1);

    const refused = await serve((_request, index) =>
      index === 0 ? { status: 400, json: { error: 'amount must be positive' } } : { status: 409, json: { error: 'the refund exceeds the confirmed amount' } },
    );
    await expect(client(refused.url).refunds.create({ paymentId: 'ses_1' })).rejects.toBeInstanceOf(BadRequestError);
    await expect(client(refused.url).refunds.create({ paymentId: 'ses_1' })).rejects.toBeInstanceOf(ConflictError);
    expect(refused.seen).toHaveLength(2);
  });

  test('gives up after maxRetries with the last error; maxRetries 0 makes one attempt', async () => {
    const server = await serve(() => ({ status: 503, json: { error: 'the service is temporarily unavailable' } }));
    await expect(client(server.url, { maxRetries: 2 }).status.retrieve()).rejects.toMatchObject({
      name: 'ServerError',
      status: 503,
      message: 'the service is temporarily unavailable',
    });
    expect(server.seen).toHaveLength(3);
    await expect(client(server.url).status.retrieve({ maxRetries: 0 })).rejects.toBeInstanceOf(ServerError);
    expect(server.seen).toHaveLength(4);
    const down = client('http://127.0.0.1:1/api/v1', { maxRetries: 1 });
    await expect(down.status.retrieve()).rejects.toBeInstanceOf(APIConnectionError);
  });

  test('a 429 waits its Retry-After; one longer than maxRetryAfterMs is thrown at once', async () => {
    const server = await serve((_request, index) =>
      index === 0 ? { status: 429, headers: { 'retry-after': '1' }, json: { error: 'rate limited' } } : { status: 200, json: PAYMENT },
    );
    const retries: RetryEvent[] = [];
    const started = Date.now();
    await client(server.url, { onRetry: (event) => retries.push(event) }).payments.retrieve('ses_1');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(retries.map((event) => event.delayMs)).toEqual([1000]);

    const slow = await serve(() => ({ status: 429, headers: { 'retry-after': '120' }, json: { error: 'rate limited' } }));
    const error = await client(slow.url)
      .payments.retrieve('ses_1')
      .catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterSeconds).toBe(120);
    expect(slow.seen).toHaveLength(1);
  });
});

describe('errors', () => {
  test.each([
    [400, BadRequestError],
    [401, AuthenticationError],
    [403, PermissionDeniedError],
    [404, NotFoundError],
    [409, ConflictError],
    [422, UnprocessableEntityError],
    [429, RateLimitError],
    [500, ServerError],
    [418, GatewayError],
  ])('%i is a %o carrying status, the gateway message and the request id', async (status, ErrorClass) => {
    const server = await serve(() => ({ status, headers: { 'x-request-id': 'req_7', 'retry-after': '300' }, json: { error: `refused with ${status}` } }));
    const error = (await client(server.url, { maxRetries: 0 })
      .events.retrieve('evt_1')
      .catch((thrown: unknown) => thrown)) as GatewayError;
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(GatewayError);
    expect([error.status, error.message, error.requestId, error.body]).toEqual([
      status,
      `refused with ${status}`,
      'req_7',
      { error: `refused with ${status}` },
    ]);
  });

  test('without a request id header the error has none; a body that is not JSON is kept as text', async () => {
    const server = await serve(() => ({ status: 502, headers: { 'content-type': 'text/plain' } }));
    const error = (await client(server.url, { maxRetries: 0 })
      .events.retrieve('evt_1')
      .catch((thrown: unknown) => thrown)) as GatewayError;
    expect([error.name, error.status, error.message, error.requestId]).toEqual(['ServerError', 502, 'HTTP 502', undefined]);
  });
});

describe('pagination', () => {
  test('await gives the first page; for await walks every page, asking for each with startingAfter', async () => {
    const pages = [
      { data: [{ id: 'ses_3' }, { id: 'ses_2' }], hasMore: true, nextCursor: 'ses_2' },
      { data: [{ id: 'ses_1' }], hasMore: false, nextCursor: null },
    ];
    const server = await serve((request) => ({ status: 200, json: request.url.includes('startingAfter=ses_2') ? pages[1] : pages[0] }));
    const gateway = client(server.url);
    const listing = gateway.payments.list({ status: 'settled', limit: 2 });
    expect(server.seen).toHaveLength(0); // nothing is fetched until used
    expect(await listing).toEqual(pages[0]);
    const ids: string[] = [];
    for await (const payment of gateway.payments.list({ status: 'settled', limit: 2 })) ids.push(payment.id);
    expect(ids).toEqual(['ses_3', 'ses_2', 'ses_1']);
    expect(server.seen.map((request) => request.url)).toEqual([
      '/api/v1/payments?status=settled&limit=2',
      '/api/v1/payments?status=settled&limit=2',
      '/api/v1/payments?status=settled&limit=2&startingAfter=ses_2',
    ]);
  });
});

describe('webhook verifier beyond the shared vectors', () => {
  const secret = 'whsec_unit';
  const body = Buffer.from(JSON.stringify({ id: 'evt_1', event: 'payment.confirmed', data: {}, timestamp: '2026-01-01T00:00:00.000Z', livemode: false }));
  const now = 1_767_225_600;
  const signed = (nonce: string) =>
    new Headers({ 'X-Service-Signature': computeSignature(secret, now, nonce, body), 'X-Service-Timestamp': String(now), 'X-Service-Nonce': nonce });

  test('takes a Buffer body and fetch Headers; with a nonce cache a replayed nonce is refused', async () => {
    const nonceCache = createMemoryNonceCache();
    const headers = signed('nonce-1');
    await expect(verifyWebhook(body, headers, secret, { now: now * 1000, nonceCache })).resolves.toMatchObject({ id: 'evt_1' });
    await expect(verifyWebhook(body, headers, secret, { now: now * 1000, nonceCache })).rejects.toMatchObject({ reason: 'nonce_reused' });
    await expect(verifyWebhook(body, signed('nonce-2'), secret, { now: now * 1000, nonceCache })).resolves.toMatchObject({ id: 'evt_1' });
  });

  test('constructWebhookEvent is synchronous: it returns the event or throws, never a promise; a nonce cache must answer at once', () => {
    const nonceCache = createMemoryNonceCache();
    const event = constructWebhookEvent(body, signed('sync-1'), secret, { now: now * 1000, nonceCache });
    expect(event).not.toBeInstanceOf(Promise);
    expect(event).toMatchObject({ id: 'evt_1' });
    expect(() => constructWebhookEvent(body, signed('sync-1'), secret, { now: now * 1000, nonceCache })).toThrow(
      expect.objectContaining({ reason: 'nonce_reused' }),
    );
    expect(() => constructWebhookEvent(body, signed('sync-2'), 'whsec_forged', { now: now * 1000 })).toThrow(
      expect.objectContaining({ reason: 'signature_mismatch' }),
    );
    const asyncCache = { checkAndRemember: async () => true } as unknown as { checkAndRemember: () => boolean };
    expect(() => constructWebhookEvent(body, signed('sync-3'), secret, { now: now * 1000, nonceCache: asyncCache })).toThrow(TypeError);
  });

  test('a forged delivery does not take up its nonce; the tolerance is configurable', async () => {
    const nonceCache = createMemoryNonceCache();
    const headers = signed('nonce-3');
    await expect(verifyWebhook(body, headers, 'whsec_wrong', { now: now * 1000, nonceCache })).rejects.toMatchObject({ reason: 'signature_mismatch' });
    await expect(verifyWebhook(body, headers, secret, { now: now * 1000, nonceCache })).resolves.toMatchObject({ id: 'evt_1' });
    await expect(verifyWebhook(body, signed('nonce-4'), secret, { now: (now + 61) * 1000, toleranceSeconds: 60 })).rejects.toMatchObject({
      reason: 'timestamp_out_of_tolerance',
    });
  });
});

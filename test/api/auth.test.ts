import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { revokeApiKey, listApiKeys } from '../../src/accounts/index.ts';
import { newMerchant, WALLET, useApi } from '../helpers/api.ts';

const db = useTestDatabase('api_auth');
const api = useApi(db);
const { call } = api;

const session = { amount: '3', currency: 'USDC', chain: 'base', merchantWallet: WALLET };

describe('authentication and scopes', () => {
  test.each(['/api/v1', '/v1'])('%s: missing, unknown and malformed keys are 401 on both interfaces; /health needs none', async (prefix) => {
    expect(await call('POST', `${prefix}/sessions`, { body: session })).toMatchObject({
      status: 401,
      body: { error: 'missing API key: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>"' },
      // RFC 6750: a 401 names the scheme it wants.
      headers: { 'www-authenticate': 'Bearer realm="svc"' },
    });
    expect(await call('GET', `${prefix}/payments`, { key: `svc_test_${'A'.repeat(32)}`, as: 'x-api-key' })).toMatchObject({
      status: 401,
      body: { error: 'invalid API key' },
    });
    expect(await call('GET', `${prefix}/currencies`, { key: 'hello' })).toMatchObject({ status: 401, body: { error: 'invalid API key' } });
    expect(await call('GET', `${prefix}/currencies`, { headers: { authorization: 'Basic abc' } })).toMatchObject({ status: 401 });
    const health = await call('GET', `${prefix}/health`);
    expect(health).toMatchObject({ status: 200, body: { status: 'healthy', database: 'ok' } });
  });

  test('a revoked key is 401; authentication comes before validation (a bad body without a key is 401, not 400)', async () => {
    const m = await newMerchant(db.store);
    const [key] = (await listApiKeys(db.store, { merchantId: m.id })).filter((k) => k.hint.endsWith(m.test.slice(-4)));
    await revokeApiKey(db.store, key!.id);
    expect(await call('GET', '/api/v1/payments', { key: m.test })).toMatchObject({ status: 401, body: { error: 'this API key has been revoked' } });
    expect((await call('POST', '/api/v1/sessions', { body: { nonsense: true } })).status).toBe(401);
  });

  test('Bearer and X-API-Key carrying different keys is 401', async () => {
    const m = await newMerchant(db.store);
    const answer = await call('GET', '/api/v1/payments', { headers: { authorization: `Bearer ${m.test}`, 'x-api-key': m.live } });
    expect(answer).toMatchObject({ status: 401, body: { error: 'the Authorization and X-API-Key headers carry different keys' } });
  });

  test('a read-only key reads (200) and cannot write (403) on every POST', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/payments', { key: m.test, body: session });
    expect((await call('GET', `/api/v1/payments/${created.body.id}`, { key: m.readOnly })).status).toBe(200);
    for (const url of [
      '/api/v1/sessions',
      '/api/v1/payments',
      '/v1/checkout/sessions',
      '/api/v1/payment-links',
      '/api/v1/refunds',
      '/api/v1/wallets/challenges',
      '/api/v1/wallets',
    ]) {
      const answer = await call('POST', url, { key: m.readOnly, as: 'x-api-key', body: session });
      expect(answer, url).toMatchObject({ status: 403, body: { error: 'this API key lacks the "write" scope needed for POST requests' } });
    }
  });
});

describe('isolation', () => {
  test("another merchant's session, link and refund are 404, never 403", async () => {
    const owner = await newMerchant(db.store, 'Owner');
    const other = await newMerchant(db.store, 'Other');
    const created = await call('POST', '/api/v1/sessions', { key: owner.test, body: session });
    const link = await call('POST', '/api/v1/payment-links', { key: owner.test, body: session });
    expect(link.status).toBe(201);
    for (const url of [`/api/v1/sessions/${created.body.id}`, `/api/v1/payments/${created.body.id}`, `/api/v1/payment-links/${link.body.id}`]) {
      expect((await call('GET', url, { key: other.test })).status, url).toBe(404);
    }
    expect((await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: other.test, body: { active: false } })).status).toBe(404);
    expect((await call('POST', '/api/v1/refunds', { key: other.test, body: { paymentId: created.body.id, address: WALLET } })).status).toBe(404);
    const list = await call('GET', '/api/v1/payments', { key: other.test });
    expect(list.body.data).toEqual([]);
  });

  test('a test key never sees live data, nor a live key test data', async () => {
    const m = await newMerchant(db.store);
    const testSession = await call('POST', '/api/v1/sessions', { key: m.test, body: session });
    const liveSession = await call('POST', '/api/v1/sessions', { key: m.live, body: session });
    expect(testSession.body.livemode).toBe(false);
    expect(liveSession.body.livemode).toBe(true);
    expect((await call('GET', `/api/v1/sessions/${liveSession.body.id}`, { key: m.test })).status).toBe(404);
    expect((await call('GET', `/api/v1/payments/${testSession.body.id}`, { key: m.live })).status).toBe(404);
    expect((await call('GET', '/api/v1/payments', { key: m.test })).body.data.map((p: { id: string }) => p.id)).toEqual([testSession.body.id]);
    expect((await call('GET', '/api/v1/payments', { key: m.live })).body.data.map((p: { id: string }) => p.id)).toEqual([liveSession.body.id]);
  });
});

describe('routing', () => {
  test('an unknown path is a 404 JSON error, with or without a key', async () => {
    for (const headers of [{}, { 'x-api-key': `svc_test_${'A'.repeat(32)}` }]) {
      const answer = await api.app.inject({ method: 'GET', url: '/api/v1/nope?x=1', headers });
      expect(answer.statusCode).toBe(404);
      expect(answer.json()).toEqual({ error: 'no route for GET /api/v1/nope' });
    }
  });
});

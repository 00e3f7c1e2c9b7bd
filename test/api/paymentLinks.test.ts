import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { MAX_OPEN_SESSIONS_PER_LINK } from '../../src/payments/links.ts';
import { useApi, newMerchant, PUBLIC_URL, WALLET } from '../helpers/api.ts';

/**
 * Payment links over the API: create, read, list, a fresh session per visit, the cap on open
 * sessions, deactivation, the page a browser gets when a link cannot start a checkout, validation.
 */
const db = useTestDatabase('api_payment_links');
const api = useApi(db);
const { call } = api;

const payment = (extra: Record<string, unknown> = {}) => ({ amount: '10', currency: 'USDC', chain: 'base', merchantWallet: WALLET, ...extra });

describe('payment links', () => {
  test('create, read, list; each visit to the public URL creates a fresh session and redirects (303) to its checkout page', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '10.5', metadata: { sku: 'tee' }, expiresIn: 900 }) });
    expect(link.status).toBe(201);
    expect(link.body).toMatchObject({
      active: true,
      amount: '10.5',
      currency: 'USDC',
      chain: 'base',
      merchantWallet: WALLET,
      expiresIn: 900,
      sessionsCreated: 0,
      livemode: false,
    });
    expect(link.body.url).toBe(`${PUBLIC_URL}/pay/${link.body.id}`);
    expect((await call('GET', `/api/v1/payment-links/${link.body.id}`, { key: m.test })).body).toEqual(link.body);

    const visits = [];
    for (let i = 0; i < 2; i++) visits.push(await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` }));
    const sessionIds = visits.map((visit) => {
      expect(visit.statusCode).toBe(303);
      return /\/checkout\/(ses_\w+)$/.exec(String(visit.headers.location))![1]!;
    });
    expect(new Set(sessionIds).size).toBe(2);
    const session = await call('GET', `/api/v1/payments/${sessionIds[1]}`, { key: m.test });
    expect(session.body).toMatchObject({
      status: 'pending',
      amount: '10.5',
      metadata: { sku: 'tee' },
      paymentLinkId: link.body.id,
      amountDueBaseUnits: '10500001',
    });
    expect(new Date(session.body.expiresAt).getTime() - new Date(session.body.createdAt).getTime()).toBe(900_000);
    expect((await call('GET', '/api/v1/payment-links', { key: m.test })).body).toMatchObject({
      data: [{ id: link.body.id, sessionsCreated: 2 }],
      hasMore: false,
    });
  });

  test('a link has at most MAX_OPEN_SESSIONS_PER_LINK unpaid sessions open: anonymous visits cannot use up its price', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '3' }) });
    // Open sessions as visits would, then one more visit: 429 with Retry-After, nothing created.
    for (let i = 0; i < MAX_OPEN_SESSIONS_PER_LINK; i++) {
      expect((await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
    }
    const refused = await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    const count = async () =>
      (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1', [link.body.id])).rows[0]!.n;
    expect(await count()).toBe(MAX_OPEN_SESSIONS_PER_LINK);
    // The merchant's own API sessions at that price still get due amounts.
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: payment({ amount: '3' }) })).status).toBe(201);
    // When one expires, a visitor gets a session again.
    await db.store.query(
      `UPDATE payment_sessions SET expires_at = now() - interval '1 second' WHERE id = (SELECT id FROM payment_sessions WHERE payment_link_id = $1 LIMIT 1)`,
      [link.body.id],
    );
    expect((await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
  });

  test('deactivated links answer 410 and create nothing; reactivation works; unknown links are 404', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment() });
    const off = await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: false } });
    expect(off.body.active).toBe(false);
    const gone = await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` });
    expect(gone.statusCode).toBe(410);
    expect(gone.json()).toEqual({ error: 'this payment link is no longer active' });
    expect((await call('GET', '/api/v1/payment-links?active=false', { key: m.test })).body.data.length).toBe(1);
    expect((await call('GET', '/api/v1/payment-links?active=true', { key: m.test })).body.data.length).toBe(0);
    await call('PATCH', `/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: true } });
    expect((await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
    expect((await api.app.inject({ method: 'GET', url: '/pay/plink_unknown' })).statusCode).toBe(404);
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1', [link.body.id]);
    expect(rows[0]!.n).toBe(1);
  });

  test("a customer's browser gets a page, not JSON, when a link cannot start a checkout", async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment() });
    await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: false } });
    const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const gone = await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: browser });
    expect(gone.statusCode).toBe(410);
    expect(gone.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(gone.body).toContain('<h1>Payment link no longer active</h1>');
    // The checkout's headers: strict CSP, no framing, no caching.
    expect(gone.headers).toMatchObject({
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
      'content-security-policy': expect.stringContaining("default-src 'none'"),
    });
    const unknown = await api.app.inject({ method: 'GET', url: '/pay/plink_unknown', headers: browser });
    expect([unknown.statusCode, unknown.body.includes('<h1>Payment link not found</h1>')]).toEqual([404, true]);
    // API clients (JSON, or no Accept at all) keep the JSON error.
    expect((await api.app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: { accept: 'application/json' } })).json()).toEqual({
      error: 'this payment link is no longer active',
    });
  });
  test('link creation validates like a payment', async () => {
    const m = await newMerchant(db.store);
    expect(await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '1.1234567' }) })).toMatchObject({
      status: 400,
      body: { error: 'amount 1.1234567 has 7 decimal places; this token has 6' },
    });
    const { merchantWallet: _w, ...noWallet } = payment();
    expect(await call('POST', '/api/v1/payment-links', { key: m.live, body: noWallet })).toMatchObject({
      status: 400,
      body: {
        error: expect.stringMatching(/^merchantWallet is required: this merchant has no default wallet on base; pass merchantWallet, or choose a default/),
      },
    });
    expect(await call('PATCH', '/api/v1/payment-links/plink_x', { key: m.test, body: { active: 'no' } })).toMatchObject({
      status: 400,
      body: { error: 'active must be a boolean' },
    });
  });
});

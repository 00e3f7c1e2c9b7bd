import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';

const db = useTestDatabase('api_payment_link_options');
const api = useApi(db);
const { call } = api;

const BASE_USDC = { chain: 'base', currency: 'USDC' };
const POLYGON_USDT = { chain: 'polygon', currency: 'USDT' };

async function linkSessions(linkId: string): Promise<number> {
  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1', [linkId]);
  return rows[0]!.n;
}

describe('payment links with payment options', () => {
  test('a visit shows the chooser and creates no session; the choice creates one with the chosen pair', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/payment-links', {
      key: m.test,
      body: { amount: '12.50', paymentOptions: [BASE_USDC, POLYGON_USDT], description: 'Tea' },
    });
    expect(created).toMatchObject({ status: 201, body: { chain: null, currency: null, paymentOptions: [BASE_USDC, POLYGON_USDT], amount: '12.5' } });
    const id = created.body.id as string;
    // The page itself (the OpenAPI checker reads JSON bodies only).
    const page = await api.app.inject({ method: 'GET', url: `/pay/${id}`, headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).toContain('<legend>Choose how to pay</legend>');
    expect(page.body).toContain('value="polygon:USDT"');
    const json = await call('GET', `/pay/${id}`, { headers: { accept: 'application/json' } });
    expect(json.body.options.map((o: { chain: string; amount: string }) => [o.chain, o.amount])).toEqual([
      ['base', '12.50'],
      ['polygon', '12.50'],
    ]);
    expect(await linkSessions(id)).toBe(0);

    expect((await call('POST', `/pay/${id}/choice`, { body: { chain: 'arbitrum', currency: 'USDC' } })).status).toBe(400);
    expect(await linkSessions(id)).toBe(0);
    const chose = await call('POST', `/pay/${id}/choice`, {
      body: 'option=polygon%3AUSDT',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    });
    expect(chose.status).toBe(303);
    const sessionId = String(chose.headers.location).split('/checkout/')[1]!;
    expect(await linkSessions(id)).toBe(1);
    const session = await call('GET', `/api/v1/payments/${sessionId}`, { key: m.test });
    expect(session.body).toMatchObject({
      chain: 'polygon',
      currency: 'USDT',
      amount: '12.5',
      paymentLinkId: id,
      choice: POLYGON_USDT,
      paymentOptions: [BASE_USDC, POLYGON_USDT],
    });
    const link = await call('GET', `/api/v1/payment-links/${id}`, { key: m.test });
    expect(link.body.sessionsCreated).toBe(1);
  });

  test('the per-link cap of open checkouts applies when the customer chooses', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '1', paymentOptions: [BASE_USDC, POLYGON_USDT] } });
    const id = created.body.id as string;
    const { MAX_OPEN_SESSIONS_PER_LINK } = await import('../../src/payments/links.ts');
    // Fill the link's open checkouts directly (as that many choices would), then one more choice is refused.
    for (let i = 0; i < MAX_OPEN_SESSIONS_PER_LINK; i++) {
      const answer = await call('POST', `/pay/${id}/choice`, { body: BASE_USDC });
      expect(answer.status).toBe(303);
    }
    const refused = await call('POST', `/pay/${id}/choice`, { body: POLYGON_USDT });
    expect(refused.status).toBe(429);
    expect(await linkSessions(id)).toBe(MAX_OPEN_SESSIONS_PER_LINK);
  });

  test('a single-pair link still redirects at once; an inactive link with options is 410', async () => {
    const m = await newMerchant(db.store);
    const single = await call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '1', ...BASE_USDC } });
    expect(single.body).toMatchObject({ chain: 'base', currency: 'USDC', paymentOptions: [BASE_USDC] });
    expect((await call('GET', `/pay/${single.body.id}`)).status).toBe(303);
    const multi = await call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '1', paymentOptions: [BASE_USDC, POLYGON_USDT] } });
    await call('PATCH', `/api/v1/payment-links/${multi.body.id}`, { key: m.test, body: { active: false } });
    expect((await call('GET', `/pay/${multi.body.id}`)).status).toBe(410);
    expect((await call('POST', `/pay/${multi.body.id}/choice`, { body: BASE_USDC })).status).toBe(410);
  });
});

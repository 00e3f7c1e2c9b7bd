import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';
import { insertTransfer, setHead } from '../helpers/engine.ts';
import { png } from '../helpers/images.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';

const db = useTestDatabase('api_purchase_details');
const { call } = useApi(db);

const PURCHASE = {
  description: 'Order #1042: coffee beans',
  lineItems: [
    { name: 'Ethiopia Yirgacheffe 250 g', quantity: 2, unitAmount: '12.5' },
    { name: 'Shipping', quantity: 1, unitAmount: '4.99' },
  ],
  cancelUrl: 'https://shop.example/cart',
  successUrl: 'https://shop.example/thanks',
};
const ITEMS_VIEW = [
  { name: 'Ethiopia Yirgacheffe 250 g', quantity: 2, unitAmount: '12.5', amount: '25' },
  { name: 'Shipping', quantity: 1, unitAmount: '4.99', amount: '4.99' },
];

describe('description, line items and cancelUrl on sessions, payments and links', () => {
  test.each([
    ['Interface A', '/api/v1/sessions'],
    ['Interface B', '/api/v1/payments'],
    ['Interface B checkout', '/api/v1/checkout/sessions'],
  ])('%s: carried into the view, the read-back, the checkout JSON', async (_name, path) => {
    const m = await newMerchant(db.store);
    const created = await call('POST', path, { key: m.test, body: { amount: '29.99', currency: 'USDC', chain: 'polygon', ...PURCHASE } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ description: PURCHASE.description, lineItems: ITEMS_VIEW, cancelUrl: PURCHASE.cancelUrl });
    expect(created.body.receiptUrl).toBe(`${created.body.checkoutUrl}/receipt`);
    const read = await call('GET', `/api/v1/${path.endsWith('sessions') && !path.includes('checkout') ? 'sessions' : 'payments'}/${created.body.id}`, {
      key: m.test,
    });
    expect(read.body).toMatchObject({ description: PURCHASE.description, lineItems: ITEMS_VIEW, cancelUrl: PURCHASE.cancelUrl });
    const instructions = await call('GET', `/checkout/${created.body.id}`, { headers: { accept: 'application/json' } });
    expect(instructions.body).toMatchObject({
      description: PURCHASE.description,
      lineItems: ITEMS_VIEW,
      cancelUrl: PURCHASE.cancelUrl,
      receiptUrl: created.body.receiptUrl,
      merchant: { name: 'Shop', logoUrl: null, accentColor: null, supportEmail: null, supportUrl: null },
    });
  });

  test('a session without them shows nulls', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', { key: m.test, body: { amount: '5', currency: 'USDC', chain: 'base' } });
    expect(created.body).toMatchObject({ description: null, lineItems: null, cancelUrl: null });
  });

  test.each([
    [{ lineItems: [{ name: 'A', quantity: 1, unitAmount: '10' }] }, 'lineItems add up to 10 USDC but amount is 29.99'],
    [{ lineItems: [{ name: 'A', quantity: 1, unitAmount: '29.9900001' }] }, 'lineItems[0].unitAmount 29.9900001 has 7 decimal places; this token has 6'],
    [{ lineItems: [{ name: 'A', quantity: 0, unitAmount: '1' }] }, 'lineItems.0.quantity must be at least 1'],
    [{ lineItems: [{ name: 'A', quantity: 1, unitAmount: '-1' }] }, 'lineItems.0.unitAmount must be decimal text'],
    [{ lineItems: [{ name: 'A', quantity: 1, unitAmount: 29.99 }] }, 'lineItems.0.unitAmount must be a string'],
    [{ lineItems: Array.from({ length: 51 }, () => ({ name: 'A', quantity: 1, unitAmount: '0' })) }, 'lineItems must have at most 50 items'],
    [{ lineItems: [] }, 'lineItems must not be empty'],
    [{ cancelUrl: 'javascript:alert(1)' }, 'cancelUrl must be an absolute http or https URL'],
    [{ description: 'x'.repeat(1001) }, 'description must be at most 1000 characters'],
  ])('refused with a 400 that names the field: %j', async (extra, error) => {
    const m = await newMerchant(db.store);
    for (const path of ['/api/v1/sessions', '/api/v1/payments', '/api/v1/payment-links']) {
      const answer = await call('POST', path, { key: m.test, body: { amount: '29.99', currency: 'USDC', chain: 'polygon', ...extra } });
      expect(answer).toMatchObject({ status: 400, body: { error: expect.stringContaining(error) } });
    }
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(0);
  });

  test('bsc: unit amounts may have 18 decimals', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', {
      key: m.test,
      body: { amount: '1.000000000000000001', currency: 'USDT', chain: 'bsc', lineItems: [{ name: 'Dust', quantity: 1, unitAmount: '1.000000000000000001' }] },
    });
    expect(created.body.lineItems).toEqual([{ name: 'Dust', quantity: 1, unitAmount: '1.000000000000000001', amount: '1.000000000000000001' }]);
  });

  test('a payment link carries them into each session its visits make', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: { amount: '29.99', currency: 'USDC', chain: 'polygon', ...PURCHASE } });
    expect(link.body).toMatchObject({ description: PURCHASE.description, lineItems: ITEMS_VIEW, cancelUrl: PURCHASE.cancelUrl });
    const visit = await call('GET', `/pay/${link.body.id}`);
    expect(visit.status).toBe(303);
    const sessionId = String(visit.headers.location).split('/checkout/')[1]!;
    expect((await call('GET', `/api/v1/sessions/${sessionId}`, { key: m.test })).body).toMatchObject({
      description: PURCHASE.description,
      lineItems: ITEMS_VIEW,
      cancelUrl: PURCHASE.cancelUrl,
      paymentLinkId: link.body.id,
    });
  });

  test('webhook event data carries description and line items; the receipt is 409 before payment, a page after, 404 for nothing', async () => {
    const m = await newMerchant(db.store);
    await call('PATCH', '/api/v1/brand', { key: m.live, body: { name: 'Acme Coffee', accentColor: '#ffcc00', supportEmail: 'help@acme.example' } });
    await call('POST', '/api/v1/brand/logo', { key: m.live, body: { contentType: 'image/png', data: png(64, 32).toString('base64') } });
    const created = await call('POST', '/api/v1/sessions', {
      key: m.live,
      body: { amount: '29.99', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...PURCHASE },
    });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await call('GET', `/checkout/${id}/receipt`, { headers: { accept: 'text/html' } })).status).toBe(409);
    expect((await call('GET', '/checkout/ses_00000000000000000000/receipt')).status).toBe(404);

    // Paid on chain (as the ingester stores it) and final; the real engine decides.
    const { txHash } = await insertTransfer(db.store, { to: created.body.paymentAddress, amount: BigInt(created.body.amountDueBaseUnits), block: 100n });
    await setHead(db.store, { head: 200n, finalized: 200n });
    const engine = createEngine({ store: db.store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
    await engine.reconcile({ chain: 'polygon', livemode: true });
    const { rows } = await db.store.query<{ type: string; data: Record<string, unknown> }>(
      "SELECT type, payload->'data' AS data FROM events WHERE session_id = $1 ORDER BY seq",
      [id],
    );
    expect(rows.map((row) => row.type)).toContain('payment.confirmed');
    for (const row of rows) expect(row.data).toMatchObject({ description: PURCHASE.description, lineItems: ITEMS_VIEW });

    const receipt = await call('GET', `/checkout/${id}/receipt`, { headers: { accept: 'text/html' } });
    expect(receipt.status).toBe(200);
    expect(receipt.headers['content-security-policy']).toContain("img-src 'self'");
    expect(receipt.body).toContain(`https://polygonscan.com/tx/${txHash}`);
    expect(receipt.body).toContain('Acme Coffee');
    expect(receipt.body).toContain('Ethiopia Yirgacheffe 250 g');
    expect(receipt.body).toContain('help@acme.example');
    // Yellow is light: black text on it.
    expect(receipt.body).toContain(':root{--brand:#ffcc00;--brand-text:#000000}');

    // The logo, from the gateway's own origin.
    const instructions = (await call('GET', `/checkout/${id}`, { headers: { accept: 'application/json' } })).body;
    const logoUrl = new URL(instructions.merchant.logoUrl);
    expect(logoUrl.pathname).toBe(`/checkout/${id}/logo`);
    const logo = await call('GET', logoUrl.pathname + logoUrl.search);
    expect(logo.status).toBe(200);
    expect(logo.headers['content-type']).toBe('image/png');
    expect(logo.headers['x-content-type-options']).toBe('nosniff');
    expect(logo.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(Buffer.from(logo.body, 'latin1').subarray(1, 4).toString()).toBe('PNG');
    const unversioned = await call('GET', `/checkout/${id}/logo`);
    expect(unversioned.headers['cache-control']).toBe('no-cache');
    expect((await call('GET', `/checkout/${id}/logo`, { headers: { 'if-none-match': String(unversioned.headers.etag) } })).status).toBe(304);
    expect((await call('GET', '/checkout/ses_00000000000000000000/logo')).status).toBe(404);
  });
});

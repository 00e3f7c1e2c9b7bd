import { describe, expect, test } from 'vitest';
import { formError, shopWithRoles } from '../helpers/dashboard.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { useApi } from '../helpers/api.ts';
import { linkBodyOf, readLinkForm } from '../../src/dashboard/pages/linkForm.ts';

/**
 * The payment-link form and pages (issue 26) over HTTP with a real Postgres: the form offers every
 * pair the merchant can receive (all ticked), sends one pair, several pairs, a fiat price, a
 * description and line items to the API's create function; refusals are the API's words; the
 * audit entry lists the options; a viewer cannot create; a link's page and a payment's page show
 * the options, the customer's choice (or that it is awaited) and the price.
 */
const db = useTestDatabase('dashboard_link_form');
const api = useApi(db, { checked: false });

/** A merchant with API keys and an owner, a developer and a viewer signed in to the dashboard. */
const shop = () => shopWithRoles(db.store, api.app);

const links = async (merchantId: string) =>
  (
    await db.store.query<{
      id: string;
      chain: string;
      currency: string;
      payment_options: unknown;
      price: unknown;
      amount: string | null;
      description: string | null;
    }>('SELECT id, chain, currency, payment_options, price, amount::text, description FROM payment_links WHERE merchant_id = $1 ORDER BY created_at', [
      merchantId,
    ])
  ).rows;

/** The pair checkboxes of the links page: `[name, checked]`. */
const pairBoxes = (body: string) =>
  [...body.matchAll(/<input type="checkbox" name="(pay\.[a-z]+\.[A-Z]+)" value="on"( checked)?/g)].map((m) => [m[1], Boolean(m[2])]);

describe('payment-link form (issue 26)', () => {
  test('every receivable pair is offered and ticked; several ticked make a link with paymentOptions, audited with them', async () => {
    const { m, developer } = await shop();
    const page = await developer.get('/dashboard/links');
    const boxes = pairBoxes(page.body);
    // Test mode: the sandbox receives every token on every chain.
    expect(boxes.length).toBeGreaterThanOrEqual(6);
    expect(boxes.every(([, checked]) => checked)).toBe(true);
    expect(boxes.map(([name]) => name)).toContain('pay.base.USDC');
    expect(page.body).toContain('<select id="link-price-currency" name="priceCurrency">');
    for (const fiat of ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'CAD', 'AUD']) expect(page.body).toContain(`<option value="${fiat}"`);

    const created = await developer.post('/dashboard/links', {
      amount: '12.50',
      pairsShown: '1',
      'pay.base.USDC': 'on',
      'pay.polygon.USDT': 'on',
      description: 'Tea for two',
    });
    expect(created.status).toBe(303);
    const [link] = await links(m.id);
    // In the chains' canonical order, as the API's default lists them.
    expect(link).toMatchObject({
      payment_options: [
        { chain: 'polygon', currency: 'USDT' },
        { chain: 'base', currency: 'USDC' },
      ],
      description: 'Tea for two',
    });
    const { rows } = await db.store.query<{ details: Record<string, unknown> }>(
      "SELECT details FROM audit_log WHERE merchant_id = $1 AND action = 'payment_link.created'",
      [m.id],
    );
    expect(rows[0]!.details).toMatchObject({
      chain: null,
      currency: null,
      paymentOptions: [
        { chain: 'polygon', currency: 'USDT' },
        { chain: 'base', currency: 'USDC' },
      ],
    });
    // The link's page: options, "at a visit the customer chooses", the description.
    const detail = await developer.get(`/dashboard/links/${link!.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toContain('<dd id="payment-options">USDT on polygon, USDC on base</dd>');
    expect(detail.body).toContain("Waiting for the customer's choice");
    expect(detail.body).toContain('<dd id="link-description">Tea for two</dd>');
  });

  test('one pair ticked is a single-pair link; none ticked is refused; line items and a wallet go with one pair', async () => {
    const { m, owner } = await shop();
    expect((await owner.post('/dashboard/links', { amount: '3', pairsShown: '1', 'pay.arbitrum.USDT': 'on' })).status).toBe(303);
    const none = await owner.post('/dashboard/links', { amount: '3', pairsShown: '1' });
    expect(none.status).toBe(400);
    expect(formError(none.body)).toBe('tick at least one chain and token the customer can pay with');
    const items = await owner.post('/dashboard/links', { amount: '25', pairsShown: '1', 'pay.base.USDC': 'on', lineItems: '2 x Mug = 10\nShipping = 5' });
    expect(items.status).toBe(303);
    const rows = await links(m.id);
    expect(rows.map((row) => [row.chain, row.currency, row.payment_options])).toEqual([
      ['arbitrum', 'USDT', null],
      ['base', 'USDC', null],
    ]);
    const detail = await owner.get(`/dashboard/links/${rows[1]!.id}`);
    expect(detail.body).toContain('2 × Mug: 10.00 each, 20.00');
    expect(detail.body).toContain('<dd id="payment-options">USDC on base (no choice)</dd>');
    // Line items that do not add up: the API's words.
    const wrong = await owner.post('/dashboard/links', { amount: '26', pairsShown: '1', 'pay.base.USDC': 'on', lineItems: '2 x Mug = 10' });
    const fromApi = await api.call('POST', '/api/v1/payment-links', {
      key: m.test,
      body: { amount: '26', chain: 'base', currency: 'USDC', lineItems: [{ name: 'Mug', quantity: 2, unitAmount: '10' }] },
    });
    expect(fromApi.status).toBe(400);
    expect(formError(wrong.body)).toBe(fromApi.body.error);
    expect(formError((await owner.post('/dashboard/links', { amount: '1', pairsShown: '1', 'pay.base.USDC': 'on', lineItems: 'a mug' })).body)).toBe(
      'line items line 1 must read "2 x Mug = 12.50" (quantity optional)',
    );
    // Several pairs with a wallet of one chain: the API's refusal, kept in the form.
    const wallet = await owner.post('/dashboard/links', {
      amount: '1',
      pairsShown: '1',
      'pay.base.USDC': 'on',
      'pay.polygon.USDC': 'on',
      merchantWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    });
    expect(wallet.status).toBe(400);
    expect(formError(wallet.body)).toBe('merchantWallet cannot be combined with paymentOptions: each chain is paid to its own default wallet');
    expect(
      pairBoxes(wallet.body)
        .filter(([, checked]) => checked)
        .map(([name]) => name),
    ).toEqual(['pay.polygon.USDC', 'pay.base.USDC']);
    expect((await links(m.id)).length).toBe(2);
  });

  test('a fiat price: one pair makes a priced link; with several pairs the form sends both and shows what the API answers', async () => {
    const { m, owner } = await shop();
    expect((await owner.post('/dashboard/links', { priceAmount: '49.00', priceCurrency: 'EUR', pairsShown: '1', 'pay.base.USDC': 'on' })).status).toBe(303);
    const [priced] = await links(m.id);
    expect(priced).toMatchObject({ amount: null, price: { amount: '49.00', currency: 'EUR' }, chain: 'base', currency: 'USDC' });
    const detail = await owner.get(`/dashboard/links/${priced!.id}`);
    expect(detail.body).toContain('<dd id="fiat-price">49.00 EUR <span class="help">(converted into the token at each visit)</span></dd>');

    // Both an amount and a price: the API's refusal word for word.
    const both = await owner.post('/dashboard/links', { amount: '5', priceAmount: '5', priceCurrency: 'USD', pairsShown: '1', 'pay.base.USDC': 'on' });
    expect(formError(both.body)).toBe('give either amount (in the token) or price (in a fiat currency), not both');

    // Several pairs with a price: whatever the API answers to the same body (a 400 until fiat-at-choice lands), the form does.
    const body = {
      price: { amount: '9.99', currency: 'GBP' },
      paymentOptions: [
        { chain: 'polygon', currency: 'USDT' },
        { chain: 'base', currency: 'USDC' },
      ],
    };
    const form = { priceAmount: '9.99', priceCurrency: 'GBP', pairsShown: '1', 'pay.base.USDC': 'on', 'pay.polygon.USDT': 'on' };
    expect(linkBodyOf(readLinkForm(form))).toEqual(body);
    const before = (await links(m.id)).length;
    const page = await owner.post('/dashboard/links', form);
    const fromApi = await api.call('POST', '/api/v1/payment-links', { key: m.test, body });
    if (fromApi.status === 400) {
      expect(page.status).toBe(400);
      expect(formError(page.body)).toBe(fromApi.body.error);
      expect(page.body).toContain('value="9.99"');
      expect((await links(m.id)).length).toBe(before + 0);
    } else {
      expect(fromApi.status).toBe(201);
      expect(page.status).toBe(303);
    }
  });

  test('a merchant that can receive no pair in this mode is offered every pair unticked, with what to do', async () => {
    const { developer } = await shop();
    // Live mode, no live chain watched by this daemon and no live wallet: nothing receivable.
    expect((await developer.post('/dashboard/mode', { livemode: 'true' })).status).toBe(303);
    const page = await developer.get('/dashboard/links');
    const boxes = pairBoxes(page.body);
    expect(boxes.length).toBeGreaterThanOrEqual(6);
    expect(boxes.some(([, checked]) => checked)).toBe(false);
    expect(page.body).toContain('You cannot receive any chain and token in live mode with your wallets yet');
  });

  test('a viewer cannot create a link from the new form, even with a valid CSRF token; a cross-site post is refused', async () => {
    const { m, viewer, developer } = await shop();
    const form = { amount: '1', pairsShown: '1', 'pay.base.USDC': 'on', 'pay.polygon.USDC': 'on' };
    expect((await viewer.post('/dashboard/links', form)).status).toBe(403);
    expect((await developer.post('/dashboard/links', form, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await developer.post('/dashboard/links', form, { csrf: 'forged' })).status).toBe(403);
    expect(await links(m.id)).toEqual([]);
  });

  test("a payment's page shows the options and the choice; a session waiting for its choice says so", async () => {
    const { m, owner } = await shop();
    const link = await api.call('POST', '/api/v1/payment-links', {
      key: m.test,
      body: {
        amount: '7',
        paymentOptions: [
          { chain: 'base', currency: 'USDC' },
          { chain: 'polygon', currency: 'USDT' },
        ],
      },
    });
    const chose = await api.call('POST', `/pay/${link.body.id}/choice`, { body: { chain: 'polygon', currency: 'USDT' } });
    expect(chose.status).toBe(303);
    const sessionId = String(chose.headers.location).split('/checkout/')[1]!;
    const page = await owner.get(`/dashboard/payments/${sessionId}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<dd id="payment-options">USDC on base, USDT on polygon</dd>');
    expect(page.body).toContain('<dd id="payment-choice">USDT on polygon</dd>');
    expect(page.body).toContain(`href="/dashboard/links/${link.body.id}"`);

    const waiting = await api.call('POST', '/api/v1/checkout/sessions', {
      key: m.test,
      body: {
        amount: '4',
        paymentOptions: [
          { chain: 'base', currency: 'USDC' },
          { chain: 'arbitrum', currency: 'USDC' },
        ],
      },
    });
    expect(waiting.status).toBe(201);
    expect(waiting.body.choice).toBeNull();
    const pending = await owner.get(`/dashboard/payments/${waiting.body.id}`);
    expect(pending.status).toBe(200);
    expect(pending.body).toContain('<dd id="payment-options">USDC on base, USDC on arbitrum</dd>');
    expect(pending.body).toContain("Waiting for the customer's choice");
    // Another merchant does not see it.
    const other = await shop();
    expect((await other.owner.get(`/dashboard/payments/${waiting.body.id}`)).status).toBe(404);
  });
});

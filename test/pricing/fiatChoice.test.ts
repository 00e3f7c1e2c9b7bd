import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createClient, newMerchant } from '../helpers/api.ts';
import { createOpenApiChecker } from '../helpers/openapiCheck.ts';
import { startSandboxEngine } from '../helpers/livePipeline.ts';
import { newMerchantWithOwner, signedInClient } from '../helpers/dashboard.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { createApiKey } from '../../src/accounts/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { chooseOption, createPendingChoice } from '../../src/payments/choices.ts';

/**
 * A fiat price with several payment options (issue 26), in the sandbox (test keys: fixed rates,
 * EUR/USD 1.08, no RPC): the waiting session or link keeps the price, the chooser shows each
 * option's indicative amount, and the choice converts the price for the chosen pair and records the
 * quote as a single-pair fiat session does. The live path, on anvil in Chromium:
 * fiatChoice.browser.anvil.test.ts.
 */
const db = useTestDatabase('fiat_choice');
let simulated: ReturnType<typeof startSandboxEngine>;
let app: FastifyInstance;
let call: ReturnType<typeof createClient>;
beforeAll(async () => {
  const logger = createLogger({ level: 'silent' });
  simulated = startSandboxEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }), blockMs: 10, intervalMs: 100 });
  app = buildApi(db.store, { sandbox: simulated.sandbox });
  await app.ready();
  call = createClient(app, await createOpenApiChecker(app));
});
afterAll(async () => {
  await simulated?.close();
  await app?.close();
});

const BASE_USDC = { chain: 'base', currency: 'USDC' } as const;
const POLYGON_USDT = { chain: 'polygon', currency: 'USDT' } as const;
const EUR_49 = { amount: '49.00', currency: 'EUR' as const };
const choose = (id: string, pair: unknown) => call('POST', `/checkout/${id}/choice`, { body: pair });
const CONFIG = { monitorWindowSeconds: 3600, feeBps: 100, liveChains: [] };

describe('sessions priced in EUR with several options (sandbox rates)', () => {
  test.each(['/api/v1/checkout/sessions', '/api/v1/payments', '/api/v1/sessions'])(
    '%s: waits with the price; the options show 52.92 indicative; the choice fixes 52.92 and records the quote',
    async (path) => {
      const m = await newMerchant(db.store);
      const created = await call('POST', path, { key: m.test, body: { price: EUR_49, paymentOptions: [BASE_USDC, POLYGON_USDT] } });
      expect(created).toMatchObject({ status: 201, body: { chain: null, amount: null, choice: null, price: EUR_49, priceQuote: null } });
      const id = created.body.id as string;
      const read = await call('GET', `${path}/${id}`, { key: m.test });
      expect(read.body).toMatchObject({ price: EUR_49, priceQuote: null, amount: null });
      const { rows } = await db.store.query('SELECT price, terms FROM session_choices WHERE id = $1', [id]);
      expect(rows[0]).toMatchObject({ price: EUR_49 });
      expect(rows[0]!.terms.amount).toBeUndefined();

      const options = await call('GET', `/checkout/${id}`, { headers: { accept: 'application/json' } });
      expect(options.body.options.map((o: any) => [o.chain, o.currency, o.amount, o.price, o.rate, o.indicative])).toEqual([
        ['base', 'USDC', '52.92', EUR_49, '1.08', true],
        ['polygon', 'USDT', '52.92', EUR_49, '1.08', true],
      ]);
      const page = await app.inject({ method: 'GET', url: `/checkout/${id}`, headers: { accept: 'text/html' } });
      expect(page.body).toContain('about 52.92 USDC, fixed when you choose');
      expect(page.body).toContain('<strong>49.00 EUR</strong>');

      const chosen = await choose(id, BASE_USDC);
      expect(chosen).toMatchObject({ status: 200, body: { chain: 'base', currency: 'USDC', amount: '52.92', price: EUR_49 } });
      expect(chosen.body.priceQuote).toMatchObject({ source: 'sandbox', rate: '1.08', feeds: [] });
      const after = await call('GET', `${path}/${id}`, { key: m.test });
      expect(after.body).toMatchObject({ amount: '52.92', price: EUR_49, priceQuote: chosen.body.priceQuote, choice: BASE_USDC });
      // Idempotent: the same pair answers the same session (no second quote recorded).
      expect((await choose(id, BASE_USDC)).body.priceQuote).toEqual(chosen.body.priceQuote);
      expect((await choose(id, POLYGON_USDT)).status).toBe(409);
    },
  );

  test('with the default options: every receivable pair, each converted when chosen (bsc USDT: 18 decimals)', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/checkout/sessions', { key: m.test, body: { price: { amount: '1500', currency: 'JPY' } } });
    expect(created.status).toBe(201);
    expect(created.body.paymentOptions.length).toBeGreaterThan(2);
    expect(created.body.price).toEqual({ amount: '1500', currency: 'JPY' });
    const chosen = await choose(created.body.id, { chain: 'bsc', currency: 'USDT' });
    // 1500 × 0.0067 = 10.05.
    expect(chosen.body).toMatchObject({ amount: '10.05', decimals: 18, priceQuote: { rate: '0.0067' } });
  });

  test.each([
    [{ price: { amount: '49.001', currency: 'EUR' } }, 'too many decimal places'],
    [{ price: EUR_49, amount: '5' }, 'not both'],
    [{ price: EUR_49, lineItems: [{ name: 'A', quantity: 1, unitAmount: '49' }] }, 'lineItems cannot be combined with price'],
    [{ price: { amount: '1', currency: 'XAU' } }, 'price.currency'],
  ])('%j with several options is a 400 and writes nothing', async (extra, error) => {
    const m = await newMerchant(db.store);
    for (const path of ['/api/v1/checkout/sessions', '/api/v1/sessions', '/api/v1/payment-links']) {
      const answer = await call('POST', path, { key: m.test, body: { paymentOptions: [BASE_USDC, POLYGON_USDT], ...extra } });
      expect(answer).toMatchObject({ status: 400, body: { error: expect.stringContaining(error) } });
    }
    const { rows } = await db.store.query('SELECT (SELECT count(*)::int FROM session_choices WHERE merchant_id = $1) AS n', [m.id]);
    expect(rows[0]!.n).toBe(0);
  });

  test('chooseOption never fixes a priced waiting session without its quote, or with another price', async () => {
    const m = await newMerchant(db.store);
    const pending = await db.store.transaction((sql) =>
      createPendingChoice(sql, { merchantId: m.id, livemode: false, price: EUR_49, paymentOptions: [BASE_USDC, POLYGON_USDT], monitorWindowSeconds: 3600 }),
    );
    await expect(db.store.transaction((sql) => chooseOption(sql, { id: pending.id, pair: BASE_USDC, config: CONFIG }))).rejects.toThrow(
      /needs the converted amount/,
    );
    const quote = { source: 'sandbox' as const, rate: '1.27', feeds: [], quotedAt: new Date().toISOString() };
    await expect(
      db.store.transaction((sql) =>
        chooseOption(sql, {
          id: pending.id,
          pair: BASE_USDC,
          config: CONFIG,
          priced: { amount: '1', price: { amount: '49.00', currency: 'GBP' }, priceQuote: quote },
        }),
      ),
    ).rejects.toThrow(/not 49.00 GBP/);
    const { rows } = await db.store.query('SELECT chosen_at FROM session_choices WHERE id = $1 UNION ALL SELECT now() FROM payment_sessions WHERE id = $1', [
      pending.id,
    ]);
    expect(rows).toEqual([{ chosen_at: null }]);
    // With the quote (what the x402 settlement passes): the session records it.
    const { session } = await db.store.transaction((sql) =>
      chooseOption(sql, {
        id: pending.id,
        pair: BASE_USDC,
        config: CONFIG,
        priced: { amount: '52.92', price: EUR_49, priceQuote: { ...quote, rate: '1.08' } },
      }),
    );
    expect(session).toMatchObject({ amount: 52_920_000n, price: EUR_49, priceQuote: { rate: '1.08' } });
  });
});

test('the sandbox path: a EUR-priced link offering USDC on Base among others; the customer picks it on the page, pays exactly; the events and the dashboard show the price, the rate and the token', async () => {
  const { merchantId, owner } = await newMerchantWithOwner(db.store);
  const key = (await createApiKey(db.store, { merchantId, livemode: false })).secret;
  const link = await call('POST', '/api/v1/payment-links', {
    key,
    body: { price: EUR_49, paymentOptions: [POLYGON_USDT, BASE_USDC, { chain: 'solana', currency: 'USDC' }], description: 'A mug' },
  });
  expect(link).toMatchObject({ status: 201, body: { amount: null, price: EUR_49, chain: null, currency: null } });
  const page = await app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: { accept: 'text/html' } });
  expect(page.statusCode).toBe(200);
  expect(page.body).toMatch(/USDC on Base<\/span> · <span class="cost" data-pair="USDC on base">about 52\.92 USDC, fixed when you choose/);
  const json = await call('GET', `/pay/${link.body.id}`, { headers: { accept: 'application/json' } });
  expect(json.body.options[1]).toMatchObject({ chain: 'base', currency: 'USDC', amount: '52.92', price: EUR_49, indicative: true });
  const chose = await app.inject({
    method: 'POST',
    url: `/pay/${link.body.id}/choice`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    payload: 'option=base%3AUSDC',
  });
  expect(chose.statusCode).toBe(303);
  const id = String(chose.headers.location).split('/checkout/')[1]!;
  const instructions = await call('GET', `/checkout/${id}`, { headers: { accept: 'application/json' } });
  expect(instructions.body).toMatchObject({
    chain: 'base',
    currency: 'USDC',
    amountDue: expect.stringMatching(/^52\.92/),
    price: EUR_49,
    priceQuote: { rate: '1.08' },
  });
  const paid = await call('POST', `/api/v1/sandbox/sessions/${id}/pay`, { key, body: { outcome: 'exact' } });
  expect(paid.status).toBeLessThan(300);
  await waitFor(async () => ['confirmed', 'settled'].includes((await call('GET', `/api/v1/payments/${id}`, { key })).body.status), 'confirmed', 20_000);
  const { rows } = await db.store.query<{ type: string; data: any }>("SELECT type, payload->'data' AS data FROM events WHERE session_id = $1 ORDER BY seq", [
    id,
  ]);
  const confirmed = rows.find((row) => row.type === 'payment.confirmed')!;
  expect(confirmed.data).toMatchObject({ chain: 'base', currency: 'USDC', amount: '52.92', price: EUR_49, priceQuote: { source: 'sandbox', rate: '1.08' } });
  const dashboard = await signedInClient(app, owner.email);
  await dashboard.post('/dashboard/mode', { livemode: 'false' }, { headers: { origin: 'https://pay.example.test' } });
  const detail = await dashboard.get(`/dashboard/payments/${id}`);
  expect(detail.status).toBe(200);
  expect(detail.body).toContain('<dd id="fiat-price">49.00 EUR at 1.08 USDC per EUR</dd>');
  expect(detail.body).toMatch(/<dd id="price-feeds">sandbox rate/);
  expect(detail.body).toMatch(/<dt>Chain<\/dt><dd>base<\/dd>/);
});

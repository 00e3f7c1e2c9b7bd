import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, SOLANA_WALLET, useApi, WALLET } from '../helpers/api.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { feedAddress, setFeed } from '../helpers/priceFeeds.ts';
import { insertTransfer, newEvmWallet, setHead } from '../helpers/engine.ts';
import { createEngine } from '../../src/engine/index.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';

/**
 * Sessions priced in a fiat currency (issue 26) against a real chain: anvil as polygon, with a
 * test aggregator (test/contracts/TestAggregator.sol) at the REAL Chainlink feed addresses of
 * chains/polygon.json, read by the API over its configured RPC URL. Only polygon has an RPC URL
 * among the EVM chains, so it is also the chain Solana's prices are read on.
 */
const db = useTestDatabase('fiat_prices_anvil');
let anvil: Anvil;
const env: Record<string, string> = { SVC_BASE_RPC_URL: '', SVC_BSC_RPC_URL: '', SVC_ARBITRUM_RPC_URL: '', SVC_OPTIMISM_RPC_URL: '' };
beforeAll(async () => {
  anvil = await startAnvil({ chain: 'polygon' });
  env.SVC_POLYGON_RPC_URL = anvil.rpcUrl;
}, 30_000);
afterAll(() => anvil?.stop());
// No feed cache: each test moves the feeds.
const api = useApi(db, { env, priceCacheMs: 0 });
const { call } = api;

const EUR_USD = 108_123_456n; // 1.08123456
const USDC_USD = 99_980_000n; // 0.9998
async function marketFeeds() {
  await setFeed(anvil, 'polygon', 'EUR/USD', { answer: EUR_USD, roundId: 110680464442257320001n });
  await setFeed(anvil, 'polygon', 'USDC/USD', { answer: USDC_USD, roundId: 36893488147419111111n });
  await setFeed(anvil, 'polygon', 'JPY/USD', { answer: 670_000n });
  await setFeed(anvil, 'polygon', 'USDT/USD', { answer: 100_010_000n });
}
const sessionsOf = async (merchantId: string) =>
  (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId])).rows[0]!.n;
const live = (m: { live: string }, body: Record<string, unknown>, path = '/api/v1/sessions') =>
  call('POST', path, { key: m.live, body: { currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...body } });

describe('live sessions priced in a fiat currency, from Chainlink feeds on anvil', () => {
  test('49.00 EUR in USDC: the exact base units, rounded up; the price and the quote with both feeds recorded', async () => {
    await marketFeeds();
    const m = await newMerchant(db.store);
    const created = await live(m, { price: { amount: '49.00', currency: 'EUR' } });
    expect(created.status).toBe(201);
    // 4900 × 108123456 × 10^14 / (10^10 × 99980000) = 52991091.658… → 52991092 (never less than the price).
    expect(created.body).toMatchObject({ amount: '52.991092', amountDueBaseUnits: '52991092', currency: 'USDC', price: { amount: '49.00', currency: 'EUR' } });
    const quote = created.body.priceQuote;
    expect(quote).toMatchObject({ source: 'chainlink', rate: '1.08145085' });
    expect(quote.feeds).toEqual([
      {
        pair: 'EUR/USD',
        chain: 'polygon',
        address: feedAddress('polygon', 'EUR/USD'),
        roundId: '110680464442257320001',
        answer: '108123456',
        decimals: 8,
        updatedAt: expect.any(String),
      },
      {
        pair: 'USDC/USD',
        chain: 'polygon',
        address: feedAddress('polygon', 'USDC/USD'),
        roundId: '36893488147419111111',
        answer: '99980000',
        decimals: 8,
        updatedAt: expect.any(String),
      },
    ]);
    expect(Math.abs(Date.parse(quote.feeds[0].updatedAt) - Date.now())).toBeLessThan(60_000);
    const read = await call('GET', `/api/v1/payments/${created.body.id}`, { key: m.live });
    expect(read.body).toMatchObject({ amount: '52.991092', price: { amount: '49.00', currency: 'EUR' }, priceQuote: quote });
  });

  test('JPY (no minor unit) in USDT; USD needs only the token feed; an exact conversion is not rounded', async () => {
    await marketFeeds();
    const m = await newMerchant(db.store);
    const jpy = await live(m, { currency: 'USDT', price: { amount: '1500', currency: 'JPY' } });
    // 1500 × 670000 × 10^14 / (10^8 × 100010000) = 10048995.9… → 10048996.
    expect(jpy.body).toMatchObject({ amount: '10.048996', currency: 'USDT', priceQuote: { rate: '0.00669933' } });
    await setFeed(anvil, 'polygon', 'USDC/USD', { answer: 100_000_000n });
    const usd = await live(m, { price: { amount: '49.99', currency: 'USD' } }, '/api/v1/checkout/sessions');
    expect(usd.status).toBe(201);
    expect(usd.body).toMatchObject({ amount: '49.99', priceQuote: { rate: '1' } });
    expect(usd.body.priceQuote.feeds.map((feed: { pair: string }) => feed.pair)).toEqual(['USDC/USD']);
    await setFeed(anvil, 'polygon', 'EUR/USD', { answer: 108_000_000n });
    const exact = await live(m, { price: { amount: '49.00', currency: 'EUR' } });
    expect(exact.body.amount).toBe('52.92');
  });

  test.each([
    [
      'a stale EUR/USD feed (older than its 27 s heartbeat plus 60 s)',
      'EUR/USD',
      { answer: EUR_USD, ageSeconds: 120 },
      /EUR\/USD feed on polygon .* longer ago than its heartbeat of 27 s/,
    ],
    [
      'USDC off its peg (0.97 USD, band ±2 %)',
      'USDC/USD',
      { answer: 97_000_000n },
      /USDC is at 0\.97 USD .* outside the peg band of ±2 % \(SVC_PEG_BAND_BPS\)/,
    ],
    ['an answer of 0', 'EUR/USD', { answer: 0n }, /EUR\/USD feed on polygon .* answers 0, which is not a price/],
    ['a negative answer', 'USDC/USD', { answer: -1n }, /USDC\/USD feed on polygon .* answers -1/],
  ] as const)('%s: 422 and nothing written', async (_name, pair, round, error) => {
    await marketFeeds();
    await setFeed(anvil, 'polygon', pair, round);
    const m = await newMerchant(db.store);
    for (const path of ['/api/v1/sessions', '/api/v1/payments', '/api/v1/checkout/sessions']) {
      const answer = await live(m, { price: { amount: '49.00', currency: 'EUR' } }, path);
      expect(answer.status).toBe(422);
      expect(answer.body.error).toMatch(error);
    }
    expect(await sessionsOf(m.id)).toBe(0);
  });

  test('inside the peg band (0.985 USD) is priced; the band is SVC_PEG_BAND_BPS', async () => {
    await marketFeeds();
    await setFeed(anvil, 'polygon', 'USDC/USD', { answer: 98_500_000n });
    const m = await newMerchant(db.store);
    const created = await live(m, { price: { amount: '10.00', currency: 'USD' } });
    expect(created.status).toBe(201);
    expect(created.body.amount).toBe('10.152285'); // 10 / 0.985 = 10.1522842… rounded up
  });

  test('a Solana session is priced from an EVM chain’s feeds (polygon here: the one with an RPC URL)', async () => {
    await marketFeeds();
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', {
      key: m.live,
      body: { chain: 'solana', currency: 'USDC', merchantWallet: SOLANA_WALLET, price: { amount: '49.00', currency: 'EUR' } },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ chain: 'solana', amount: '52.991092', priceQuote: { source: 'chainlink' } });
    expect(created.body.priceQuote.feeds.map((feed: { chain: string; pair: string }) => `${feed.chain}:${feed.pair}`)).toEqual([
      'polygon:EUR/USD',
      'polygon:USDC/USD',
    ]);
  });

  test('payment events carry the price and the quote', async () => {
    await marketFeeds();
    const m = await newMerchant(db.store);
    // A wallet of this merchant alone (the other tests' merchants share WALLET).
    const created = await live(m, { price: { amount: '49.00', currency: 'EUR' }, merchantWallet: newEvmWallet() });
    expect(created.status).toBe(201);
    await insertTransfer(db.store, { to: created.body.paymentAddress, amount: BigInt(created.body.amountDueBaseUnits), block: 100n });
    await setHead(db.store, { head: 200n, finalized: 200n });
    const engine = createEngine({ store: db.store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
    await engine.reconcile({ chain: 'polygon', livemode: true });
    const { rows } = await db.store.query<{ type: string; data: Record<string, unknown> }>(
      "SELECT type, payload->'data' AS data FROM events WHERE session_id = $1 ORDER BY seq",
      [created.body.id],
    );
    expect(rows.map((row) => row.type)).toContain('payment.confirmed');
    for (const row of rows) {
      expect(row.data).toMatchObject({ amount: '52.991092', price: { amount: '49.00', currency: 'EUR' }, priceQuote: created.body.priceQuote });
    }
    // The customer's instructions and receipt show the price and the rate.
    const instructions = await call('GET', `/checkout/${created.body.id}`, { headers: { accept: 'application/json' } });
    expect(instructions.body).toMatchObject({ price: { amount: '49.00', currency: 'EUR' }, priceQuote: { rate: '1.08145085' } });
    const receipt = await call('GET', `/checkout/${created.body.id}/receipt`, { headers: { accept: 'text/html' } });
    expect(receipt.status).toBe(200);
    expect(receipt.body).toContain('<dd id="fiat-price">49.00 EUR at 1.08145085 USDC per EUR (Chainlink)</dd>');
  });
});

describe('a live session with several options is converted at the choice', () => {
  test('the options show the indicative amounts; a stale feed at the choice is a 422 that leaves it waiting; then the chosen pair records the quote', async () => {
    await marketFeeds();
    const m = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const options = [
      { chain: 'polygon', currency: 'USDT' },
      { chain: 'polygon', currency: 'USDC' },
    ];
    const created = await call('POST', '/api/v1/checkout/sessions', {
      key: m.live,
      body: { price: { amount: '49.00', currency: 'EUR' }, paymentOptions: options },
    });
    expect(created).toMatchObject({ status: 201, body: { amount: null, price: { amount: '49.00', currency: 'EUR' }, priceQuote: null } });
    const id = created.body.id as string;
    const shown = await call('GET', `/checkout/${id}`, { headers: { accept: 'application/json' } });
    expect(shown.body.options.map((o: { amount: string; rate: string; indicative: boolean }) => [o.amount, o.rate, o.indicative])).toEqual([
      ['52.975196', '1.08112645', true], // 49 × 1.08123456 / 1.0001 = 52.9751958… rounded up
      ['52.991092', '1.08145085', true],
    ]);

    await setFeed(anvil, 'polygon', 'EUR/USD', { answer: EUR_USD, ageSeconds: 120 });
    const stale = await call('POST', `/checkout/${id}/choice`, { body: options[1] });
    expect(stale).toMatchObject({ status: 422, body: { error: expect.stringMatching(/EUR\/USD feed on polygon .* longer ago than its heartbeat/) } });
    // The page's form gets a page that says so (the OpenAPI checker reads JSON bodies only).
    const form = await api.app.inject({
      method: 'POST',
      url: `/checkout/${id}/choice`,
      payload: 'option=polygon%3AUSDC',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    });
    expect(form.statusCode).toBe(422);
    expect(form.body).toContain('Price not available right now');
    expect(await sessionsOf(m.id)).toBe(0);
    expect((await call('GET', `/api/v1/checkout/sessions/${id}`, { key: m.live })).body).toMatchObject({ status: 'pending', choice: null });

    await marketFeeds();
    const chosen = await call('POST', `/checkout/${id}/choice`, { body: options[1] });
    expect(chosen).toMatchObject({ status: 200, body: { currency: 'USDC', amount: '52.991092', amountRemainingBaseUnits: '52991092' } });
    const read = await call('GET', `/api/v1/checkout/sessions/${id}`, { key: m.live });
    expect(read.body).toMatchObject({
      amount: '52.991092',
      price: { amount: '49.00', currency: 'EUR' },
      priceQuote: { source: 'chainlink', rate: '1.08145085' },
    });
    expect(read.body.priceQuote.feeds.map((feed: { pair: string }) => feed.pair)).toEqual(['EUR/USD', 'USDC/USD']);
  });
});

test('a live EUR link with several options: a stale feed at the choice answers the 422 page and makes no session; then the choice converts for the chosen pair', async () => {
  await marketFeeds();
  const m = await newMerchant(db.store);
  await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: newEvmWallet(), verifiedBy: 'operator' });
  const link = await call('POST', '/api/v1/payment-links', {
    key: m.live,
    body: {
      price: { amount: '49.00', currency: 'EUR' },
      paymentOptions: [
        { chain: 'polygon', currency: 'USDC' },
        { chain: 'polygon', currency: 'USDT' },
      ],
    },
  });
  expect(link).toMatchObject({ status: 201, body: { amount: null, chain: null } });
  await setFeed(anvil, 'polygon', 'USDT/USD', { answer: 100_010_000n, ageSeconds: 200_000 });
  const choose = (option: string) =>
    api.app.inject({
      method: 'POST',
      url: `/pay/${link.body.id}/choice`,
      payload: `option=${encodeURIComponent(option)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
    });
  const refused = await choose('polygon:USDT');
  expect(refused.statusCode).toBe(422);
  expect(refused.body).toContain('Price not available right now');
  expect(await sessionsOf(m.id)).toBe(0);
  // The other option's feeds are fine: the customer can choose it.
  const chose = await choose('polygon:USDC');
  expect(chose.statusCode).toBe(303);
  const id = String(chose.headers.location).split('/checkout/')[1]!;
  const session = await call('GET', `/api/v1/payments/${id}`, { key: m.live });
  expect(session.body).toMatchObject({ currency: 'USDC', amount: '52.991092', paymentLinkId: link.body.id, priceQuote: { rate: '1.08145085' } });
});

import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { rateText, SANDBOX_RATES, tokenUnits, withinPeg } from '../../src/pricing/index.ts';

/**
 * Fiat prices (issue 26) without a chain: the sandbox's fixed rates (no RPC: every chain's RPC
 * URL here is unreachable), the 400s of a bad `price`, fiat-priced payment links, and the
 * conversion's arithmetic. The live path, on anvil: fiatPrices.anvil.test.ts.
 */
const db = useTestDatabase('fiat_prices');
const { call } = useApi(db);
const sessionsOf = async (merchantId: string) =>
  (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId])).rows[0]!.n;

describe('sandbox (test keys): fixed documented rates, never an RPC', () => {
  test.each([
    ['/api/v1/sessions', 'polygon', 'USDC', { amount: '49.00', currency: 'EUR' }, '52.92', '1.08'],
    ['/api/v1/payments', 'bsc', 'USDT', { amount: '49.00', currency: 'EUR' }, '52.92', '1.08'],
    ['/api/v1/checkout/sessions', 'solana', 'USDC', { amount: '1500', currency: 'JPY' }, '10.05', '0.0067'],
    ['/api/v1/sessions', 'base', 'USDC', { amount: '0.01', currency: 'GBP' }, '0.0127', '1.27'],
  ])('%s on %s in %s: %j is %s', async (path, chain, currency, price, amount, rate) => {
    const m = await newMerchant(db.store);
    const created = await call('POST', path, { key: m.test, body: { chain, currency, price } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ amount, price, priceQuote: { source: 'sandbox', rate, feeds: [] } });
  });

  test('a session with amount has null price and quote', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', { key: m.test, body: { chain: 'polygon', currency: 'USDC', amount: '5' } });
    expect(created.body).toMatchObject({ price: null, priceQuote: null });
  });
});

describe('a bad price is a 400 and writes nothing', () => {
  test.each([
    [{ price: { amount: '49.00', currency: 'XYZ' } }, 'price.currency'],
    [{ price: { amount: '49.001', currency: 'EUR' } }, 'price.amount 49.001 has too many decimal places: EUR has 2'],
    [{ price: { amount: '1500.5', currency: 'JPY' } }, 'price.amount 1500.5 has too many decimal places: JPY has 0'],
    [{ price: { amount: '-1', currency: 'EUR' } }, 'price.amount "-1" must be decimal text'],
    [{ price: { amount: '0', currency: 'EUR' } }, 'price.amount must be a positive number'],
    [{ price: { amount: 49, currency: 'EUR' } }, 'price.amount must be a string'],
    [{ price: { amount: '49.00', currency: 'EUR' }, amount: '49' }, 'give either amount (in the token) or price (in a fiat currency), not both'],
    [{}, 'amount or price is required'],
    [{ price: { amount: '49.00', currency: 'EUR' }, lineItems: [{ name: 'A', quantity: 1, unitAmount: '49' }] }, 'lineItems cannot be combined with price'],
  ])('%j', async (extra, error) => {
    const m = await newMerchant(db.store);
    for (const path of ['/api/v1/sessions', '/api/v1/payments', '/api/v1/checkout/sessions', '/api/v1/payment-links']) {
      for (const key of [m.test, m.live]) {
        const answer = await call('POST', path, {
          key,
          body: { currency: 'USDC', chain: 'polygon', merchantWallet: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', ...extra },
        });
        expect(answer).toMatchObject({ status: 400, body: { error: expect.stringContaining(error) } });
      }
    }
    expect(await sessionsOf(m.id)).toBe(0);
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_links WHERE merchant_id = $1', [m.id]);
    expect(rows[0]!.n).toBe(0);
  });
});

describe('payment links priced in a fiat currency', () => {
  test('the link stores the price (no amount); each visit’s session is converted then', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', {
      key: m.test,
      body: { chain: 'polygon', currency: 'USDC', price: { amount: '49.00', currency: 'EUR' }, description: 'A mug' },
    });
    expect(link.status).toBe(201);
    expect(link.body).toMatchObject({ amount: null, price: { amount: '49.00', currency: 'EUR' }, currency: 'USDC', chain: 'polygon' });
    expect((await call('GET', `/api/v1/payment-links/${link.body.id}`, { key: m.test })).body).toMatchObject({ amount: null, price: link.body.price });
    const visit = await call('GET', `/pay/${link.body.id}`);
    expect(visit.status).toBe(303);
    const sessionId = String(visit.headers.location).split('/checkout/')[1]!;
    const session = await call('GET', `/api/v1/sessions/${sessionId}`, { key: m.test });
    expect(session.body).toMatchObject({
      amount: '52.92',
      price: { amount: '49.00', currency: 'EUR' },
      priceQuote: { source: 'sandbox', rate: '1.08' },
      paymentLinkId: link.body.id,
      description: 'A mug',
    });
  });
});

describe('the conversion (bigint only)', () => {
  const at8 = (answer: bigint) => ({ answer, decimals: 8 });
  test('rounds up to the base unit, never down', () => {
    // 0.01 EUR at 1.08123456 USD in a 6-decimal token at 1.00: 10812.3456 → 10813.
    expect(tokenUnits({ priceMinor: 1n, priceDecimals: 2, fiatUsd: at8(108_123_456n), tokenUsd: at8(100_000_000n), tokenDecimals: 6 })).toBe(10_813n);
    // Exact: not rounded.
    expect(tokenUnits({ priceMinor: 4900n, priceDecimals: 2, fiatUsd: at8(SANDBOX_RATES['EUR/USD']), tokenUsd: at8(100_000_000n), tokenDecimals: 6 })).toBe(
      52_920_000n,
    );
    // 18 decimals (bsc).
    expect(tokenUnits({ priceMinor: 1n, priceDecimals: 0, fiatUsd: at8(670_000n), tokenUsd: at8(100_000_000n), tokenDecimals: 18 })).toBe(
      6_700_000_000_000_000n,
    );
  });
  test('rate text and the peg band', () => {
    expect(rateText(at8(108_123_456n), at8(99_980_000n))).toBe('1.08145085');
    expect(withinPeg(at8(98_000_000n), 200)).toBe(true);
    expect(withinPeg(at8(97_999_999n), 200)).toBe(false);
    expect(withinPeg(at8(102_000_001n), 200)).toBe(false);
  });
});

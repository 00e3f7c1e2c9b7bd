import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Address } from 'viem';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { startCheckoutAnvilStack } from '../helpers/checkoutAnvilStack.ts';
import { newEvmWallet } from '../helpers/engine.ts';
import { setFeed } from '../helpers/priceFeeds.ts';
import { newMerchantWithOwner, signInInBrowser } from '../helpers/dashboard.ts';
import { addWallet, createApiKey, setMerchantPaymentSettings } from '../../src/accounts/index.ts';
import type { startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { collectPageProblems, decodeQr, saveScreenshot, waitText } from '../helpers/browser.ts';

/**
 * Issue 26's "done when", nothing simulated: a payment link priced 49.00 EUR that lets the customer
 * choose among USDC and USDT on Base, on anvil as base (chain id 8453, the real token contracts)
 * with test aggregators at the REAL Chainlink feed addresses of chains/base.json. The customer opens
 * the link in Chromium, sees each option's indicative amount, picks "USDC on Base", and pays on
 * anvil exactly the amount the feeds gave; the real ingester and engine confirm it, the merchant's
 * verified webhook and the dashboard's payment page show the EUR price, the rate and the token.
 */
const db = useTestDatabase('checkout_fiat_choice_anvil');
let stack: Awaited<ReturnType<typeof startCheckoutAnvilStack>>;
let anvil: Anvil;
let browser: Browser;
let server: { app: FastifyInstance; url: string };
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let merchant: Awaited<ReturnType<typeof newMerchantWithOwner>> & { live: string; wallet: Address };

const EUR_USD = 108_123_456n; // 1.08123456
const USDC_USD = 99_980_000n; // 0.9998
// 49.00 EUR: 4900 × 108123456 × 10^14 / (10^10 × 99980000) = 52991091.658… → 52991092 base units (rounded up).
const EXPECTED_UNITS = 52_991_092n;

const api = (method: string, path: string, body?: unknown) => stack.api(merchant.live, method, path, body);

beforeAll(async () => {
  stack = await startCheckoutAnvilStack({
    db,
    chain: 'base',
    prepare: async (anvil) => {
      await setFeed(anvil, 'base', 'EUR/USD', { answer: EUR_USD });
      await setFeed(anvil, 'base', 'USDC/USD', { answer: USDC_USD });
      await setFeed(anvil, 'base', 'USDT/USD', { answer: 100_010_000n });
    },
  });
  ({ anvil, browser, server, receiver } = stack);
  const owner = await newMerchantWithOwner(db.store, { name: 'Euro Mugs' });
  const live = (await createApiKey(db.store, { merchantId: owner.merchantId, livemode: true })).secret;
  // A wallet of this merchant alone, so the due amount is the converted amount itself (no offset).
  const wallet = newEvmWallet('base') as Address;
  await addWallet(db.store, { merchantId: owner.merchantId, chain: 'base', address: wallet, verifiedBy: 'operator' });
  // Base's USDT is bridged: offered only to merchants who accept bridged tokens.
  await setMerchantPaymentSettings(db.store, owner.merchantId, { acceptBridgedTokens: true });
  merchant = { ...owner, live, wallet };
  await stack.deliverTo(live);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

test('a 49.00 EUR link: the customer picks USDC on Base in Chromium, pays what the feeds gave on anvil; webhook and dashboard show EUR, the rate and USDC on base', async () => {
  const link = await api('POST', '/api/v1/payment-links', {
    price: { amount: '49.00', currency: 'EUR' },
    paymentOptions: [
      { chain: 'base', currency: 'USDT' },
      { chain: 'base', currency: 'USDC' },
    ],
    description: 'A mug',
  });
  expect(link).toMatchObject({ status: 201, body: { amount: null, price: { amount: '49.00', currency: 'EUR' }, chain: null } });

  const context = await browser.newContext({ viewport: { width: 1024, height: 900 } });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  await page.goto(`${server.url}/pay/${link.body.id}`);
  const group = page.getByRole('group', { name: 'Choose how to pay' });
  await group.waitFor();
  expect(await page.locator('#price').textContent()).toContain('49.00 EUR');
  // The indicative amount at the feeds' rate, said to be fixed at the choice.
  const usdc = page.getByRole('radio', { name: /USDC on Base · about 52\.991092 USDC, fixed when you choose/ });
  expect(await group.getByRole('radio').count()).toBe(2);
  await saveScreenshot(page, 'fiat-chooser');
  await usdc.check();
  await page.getByRole('button', { name: 'Continue' }).click();
  await waitText(page.locator('#status'), 'Waiting for your payment.');
  const uri = await decodeQr(page);
  const [, token, recipient, units] = /^ethereum:(0x[0-9a-fA-F]{40})@8453\/transfer\?address=(0x[0-9a-fA-F]{40})&uint256=(\d+)$/.exec(uri ?? '')!;
  expect(recipient).toBe(merchant.wallet);
  expect(BigInt(units!)).toBe(EXPECTED_UNITS);
  const sessionId = new URL(page.url()).pathname.split('/checkout/')[1]!;

  await anvil.waitMined(await anvil.pay(token as Address, recipient as Address, BigInt(units!)));
  await anvil.mine(40);
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!', 30_000);

  await waitFor(async () => receiver.envelopes.some((e) => e.event === 'payment.confirmed' && e.data.id === sessionId), 'payment.confirmed webhook', 30_000);
  const confirmed = receiver.envelopes.find((e) => e.event === 'payment.confirmed' && e.data.id === sessionId)!;
  expect(confirmed.data).toMatchObject({
    chain: 'base',
    currency: 'USDC',
    amount: '52.991092',
    status: 'confirmed',
    price: { amount: '49.00', currency: 'EUR' },
    priceQuote: { source: 'chainlink', rate: '1.08145085' },
  });
  expect((confirmed.data.priceQuote as { feeds: { chain: string; pair: string }[] }).feeds.map((f) => `${f.chain}:${f.pair}`)).toEqual([
    'base:EUR/USD',
    'base:USDC/USD',
  ]);

  // The dashboard's payment page (live data: the switch opens it).
  await signInInBrowser(page, server.url, merchant.owner.email);
  await page.goto(`${server.url}/dashboard/payments/${sessionId}`);
  await page.locator('#switch-mode').click();
  await page.waitForURL(`${server.url}/dashboard/payments/${sessionId}`);
  const price = await page.locator('#fiat-price').textContent();
  expect(price).toContain('49.00 EUR at 1.08145085 USDC per EUR');
  expect(await page.locator('#price-feeds').textContent()).toMatch(/EUR\/USD round \d+ at 0x[0-9a-fA-F]{40} on base/);
  expect(await page.locator('dt:has-text("Chain") + dd').first().textContent()).toBe('base');
  await saveScreenshot(page, 'fiat-choice-dashboard');
  expect(problems.filter((problem) => !problem.startsWith('console: Failed to load resource'))).toEqual([]);
  await context.close();
}, 120_000);

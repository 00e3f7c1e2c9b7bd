import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Address } from 'viem';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { startCheckoutAnvilStack } from '../helpers/checkoutAnvilStack.ts';
import { newMerchant, WALLET } from '../helpers/api.ts';
import { addWallet } from '../../src/accounts/index.ts';
import type { startVerifyingReceiver } from '../helpers/livePipeline.ts';
import { waitFor } from '../helpers/waitFor.ts';
import { collectPageProblems, decodeQr, saveScreenshot, VIEWPORTS, waitText } from '../helpers/browser.ts';

/**
 * The customer's choice of token, nothing simulated: a live session accepting USDC and USDT on
 * polygon (anvil, chain id 137, the real token addresses), chosen through the API by an agent or
 * on the page in Chromium, paid on anvil, confirmed by the real ingester and engine, and reported
 * by a verified webhook with the chosen chain and currency.
 */
const db = useTestDatabase('checkout_chooser_anvil');
let stack: Awaited<ReturnType<typeof startCheckoutAnvilStack>>;
let anvil: Anvil;
let browser: Browser;
let server: { app: FastifyInstance; url: string };
let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
let merchant: Awaited<ReturnType<typeof newMerchant>>;

const OPTIONS = [
  { chain: 'polygon', currency: 'USDC' },
  { chain: 'polygon', currency: 'USDT' },
];

const api = (method: string, path: string, body?: unknown) => stack.api(merchant.live, method, path, body);

beforeAll(async () => {
  stack = await startCheckoutAnvilStack({ db, chain: 'polygon' });
  ({ anvil, browser, server, receiver } = stack);
  merchant = await newMerchant(db.store, 'Choice Goods');
  await addWallet(db.store, { merchantId: merchant.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
  await stack.deliverTo(merchant.live);
});
afterAll(async () => {
  await stack?.close();
});

/** Pays `instructions` on anvil and mines past the confirmation rule. */
async function payOnAnvil(instructions: { token: { address: string }; recipient: string; amountRemainingBaseUnits: string }) {
  await anvil.waitMined(
    await anvil.pay(instructions.token.address as Address, instructions.recipient as Address, BigInt(instructions.amountRemainingBaseUnits)),
  );
  await anvil.mine(40);
}

test('an agent chooses USDT through the API, pays it on anvil; the session confirms and the webhook reports polygon USDT', async () => {
  const created = await api('POST', '/api/v1/checkout/sessions', { amount: '9.99', paymentOptions: OPTIONS });
  expect(created).toMatchObject({ status: 201, body: { chain: null, currency: null, choice: null } });
  const chosen = await fetch(`${server.url}/checkout/${created.body.id}/choice`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chain: 'polygon', currency: 'USDT' }),
  });
  const instructions = (await chosen.json()) as any;
  expect(instructions).toMatchObject({ chain: 'polygon', currency: 'USDT', recipient: WALLET, payable: true });
  await payOnAnvil(instructions);
  await waitFor(
    async () => receiver.envelopes.some((e) => e.event === 'payment.confirmed' && e.data.id === created.body.id),
    'payment.confirmed webhook',
    30_000,
  );
  const confirmed = receiver.envelopes.find((e) => e.event === 'payment.confirmed' && e.data.id === created.body.id)!;
  expect(confirmed.data).toMatchObject({ chain: 'polygon', currency: 'USDT', amount: '9.99', status: 'confirmed' });
  const read = await api('GET', `/api/v1/checkout/sessions/${created.body.id}`);
  expect(read.body).toMatchObject({ status: 'confirmed', chain: 'polygon', currency: 'USDT', choice: { chain: 'polygon', currency: 'USDT' } });
});

test('the page asks first: the customer picks USDC on Polygon in Chromium, sees the instructions, pays on anvil, confirmed', async () => {
  const created = await api('POST', '/api/v1/checkout/sessions', { amount: '25.00', paymentOptions: OPTIONS, description: 'A pot of tea' });
  const context = await browser.newContext({ viewport: { width: VIEWPORTS.phone.width, height: VIEWPORTS.phone.height }, isMobile: true });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  await page.goto(created.body.checkoutUrl);
  // The chooser: a labelled radio group, each option with its cost and a network-fee note.
  const group = page.getByRole('group', { name: 'Choose how to pay' });
  await group.waitFor();
  expect(await group.getByRole('radio').count()).toBe(2);
  const usdc = page.getByRole('radio', { name: /USDC on Polygon · 25\.00 USDC/ });
  expect(await page.locator('#option-polygon-USDC-gas').textContent()).toMatch(/POL/);
  expect(await page.locator('#qr').count()).toBe(0);
  await saveScreenshot(page, 'chooser-phone');
  await usdc.check();
  await page.getByRole('button', { name: 'Continue' }).click();
  await waitText(page.locator('#status'), 'Waiting for your payment.');
  const uri = await decodeQr(page);
  const [, token, recipient, units] = /^ethereum:(0x[0-9a-fA-F]{40})@137\/transfer\?address=(0x[0-9a-fA-F]{40})&uint256=(\d+)$/.exec(uri ?? '')!;
  expect(recipient).toBe(WALLET);
  expect(BigInt(units!)).toBeGreaterThanOrEqual(25_000_000n);
  await payOnAnvil({ token: { address: token! }, recipient: recipient!, amountRemainingBaseUnits: units! });
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!', 30_000);
  const read = await api('GET', `/api/v1/checkout/sessions/${created.body.id}`);
  expect(read.body).toMatchObject({ status: 'confirmed', chain: 'polygon', currency: 'USDC' });
  // The choice is final: the page's form again with the other token is refused.
  const again = await fetch(`${server.url}/checkout/${created.body.id}/choice`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chain: 'polygon', currency: 'USDT' }),
  });
  expect(again.status).toBe(409);
  expect(problems).toEqual([]);
  await context.close();
});

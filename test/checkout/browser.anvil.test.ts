import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Address } from 'viem';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { newMerchant, WALLET } from '../helpers/api.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { formatDisplayAmount } from '../../src/internal/money.ts';
import { makeSession } from '../helpers/checkoutSessions.ts';
import { startLivePipeline } from '../helpers/livePipeline.ts';
import {
  collectPageProblems,
  decodeQr,
  launchChromium,
  saveScreenshot,
  startCheckoutServer,
  startMerchantSite,
  VIEWPORTS,
  waitText,
} from '../helpers/browser.ts';

/**
 * The whole path, nothing simulated: a customer's page in Chromium, a payment on anvil (chain id
 * 137, the real USDC address), the EVM ingester writing the transfer, the engine counting
 * confirmations, and the page's live feed showing each step until it sends the payer on.
 */
const db = useTestDatabase('checkout_anvil');
let anvil: Anvil;
let browser: Browser;
let server: { app: FastifyInstance; url: string };
let merchantSite: Awaited<ReturnType<typeof startMerchantSite>>;
let pipeline: ReturnType<typeof startLivePipeline>;

beforeAll(async () => {
  [anvil, browser, server, merchantSite] = await Promise.all([
    startAnvil({ chain: 'polygon' }),
    launchChromium(),
    startCheckoutServer(db.store),
    startMerchantSite(),
  ]);
  await anvil.installChainTokens();
  const config = loadConfig({ SVC_POLYGON_RPC_URL: anvil.rpcUrl, LOG_LEVEL: 'silent' });
  pipeline = startLivePipeline({ store: db.store, connectionString: db.connectionString, config });
});
afterAll(async () => {
  await pipeline?.close();
  await browser?.close();
  await server?.app.close();
  await merchantSite?.close();
  await anvil?.stop();
});

test('paying on anvil moves the page live: detected, confirmations N of 32, confirmed, then the redirect to successUrl', async () => {
  const merchant = await newMerchant(db.store, 'Anvil Outfitters');
  await addWallet(db.store, { merchantId: merchant.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
  const session = await makeSession(db.store, {
    merchantId: merchant.id,
    chain: 'polygon',
    merchantWallet: WALLET,
    amount: '25',
    livemode: true,
    successUrl: `${merchantSite.url}/orders/9/paid`,
  });

  const context = await browser.newContext({ viewport: { width: VIEWPORTS.desktop.width, height: VIEWPORTS.desktop.height } });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  await page.goto(`${server.url}/checkout/${session.id}`);
  await waitText(page.locator('#status'), 'Waiting for your payment.');

  // The payer's wallet reads the QR code: pay exactly what it asks, to whom it says, in its token.
  const uri = await decodeQr(page);
  const parsed = /^ethereum:(0x[0-9a-fA-F]{40})@137\/transfer\?address=(0x[0-9a-fA-F]{40})&uint256=(\d+)$/.exec(uri ?? '');
  expect(parsed, `QR decoded to ${uri}`).not.toBeNull();
  const [, token, recipient, units] = parsed!;
  expect(recipient).toBe(WALLET);
  expect(BigInt(units!)).toBe(session.amountDue);
  const hash = await anvil.pay(token as Address, recipient as Address, BigInt(units!));
  await anvil.waitMined(hash);

  await waitText(page.locator('#status'), /^Payment detected: \d+ of 32 confirmations\.$/, 20_000);
  const first = Number(await page.locator('#confirmations').textContent());
  expect(first).toBeGreaterThanOrEqual(0);
  expect(first).toBeLessThan(32);
  await saveScreenshot(page, 'anvil-detected-desktop');

  await anvil.mine(10);
  await waitText(page.locator('#confirmations'), new RegExp(`^(${Array.from({ length: 32 - first - 1 }, (_, k) => first + 1 + k).join('|')})$`), 20_000);
  expect(Number(await page.locator('#confirmations').textContent())).toBeGreaterThan(first);

  await anvil.mine(32);
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!', 20_000);
  await saveScreenshot(page, 'anvil-paid-desktop');
  await page.waitForURL(`${merchantSite.url}/orders/9/paid`, { timeout: 10_000 });

  const { rows } = await db.store.query(`SELECT status, tx_hash, amount_received::text FROM payment_sessions WHERE id = $1`, [session.id]);
  expect(rows[0]).toMatchObject({ status: 'confirmed', tx_hash: hash, amount_received: session.amountDue.toString() });
  expect(problems).toEqual([]);
  await context.close();
});

test('an underpayment on anvil shows what is left; paying the QR code for the rest confirms the session', async () => {
  const merchant = await newMerchant(db.store, 'Top-up Traders');
  // Its own receiving wallet: WALLET is the first test's merchant's verified wallet.
  const wallet: Address = '0x976EA74026E726554dB657fA54763abd0C3a0aa9';
  await addWallet(db.store, { merchantId: merchant.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
  const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: wallet, amount: '30', livemode: true });
  const context = await browser.newContext({
    viewport: { width: VIEWPORTS.phone.width, height: VIEWPORTS.phone.height },
    deviceScaleFactor: 2,
    isMobile: true,
  });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  await page.goto(`${server.url}/checkout/${session.id}`);
  const [, token] = /^ethereum:(0x[0-9a-fA-F]{40})@137/.exec((await decodeQr(page)) ?? '')!;

  const part = session.amountDue - 12_000_000n;
  await anvil.waitMined(await anvil.pay(token as Address, wallet, part));
  await waitText(page.locator('#status'), /^Payment detected: \d+ of 32 confirmations\.$/, 20_000);
  await anvil.mine(32);
  await waitText(page.locator('#status'), 'Partly paid: 12.00 USDC still to pay.', 20_000);
  await waitText(page.locator('#received'), formatDisplayAmount(part, 6));
  await saveScreenshot(page, 'anvil-underpaid-phone');

  const rest = await (async () => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const uri = await decodeQr(page);
      if (uri?.endsWith('&uint256=12000000') || Date.now() > deadline) return uri;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  expect(rest).toBe(`ethereum:${token}@137/transfer?address=${wallet}&uint256=12000000`);
  await anvil.waitMined(await anvil.pay(token as Address, wallet, 12_000_000n));
  await anvil.mine(32);
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!', 20_000);
  await page.locator('#refund').waitFor({ state: 'visible' });
  await saveScreenshot(page, 'anvil-paid-phone');
  const { rows } = await db.store.query(`SELECT status, amount_received::text FROM payment_sessions WHERE id = $1`, [session.id]);
  expect(rows[0]).toMatchObject({ status: 'confirmed', amount_received: session.amountDue.toString() });
  expect(problems).toEqual([]);
  await context.close();
});

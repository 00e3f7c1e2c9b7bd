import { beforeAll, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { getMerchantSettings, listWallets } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { collectPageProblems } from '../helpers/browser.ts';
import { newMerchantWithOwner, saveDashboardScreenshots, signInInBrowser, useDashboardBrowser } from '../helpers/dashboard.ts';

/**
 * Settings in Chromium: a receiving wallet is added by a browser wallet injected as
 * `window.ethereum` (EIP-1193 `eth_requestAccounts` and `personal_sign`), whose signatures a
 * viem private-key account makes for real in the test process; then the payment settings.
 */
const db = useTestDatabase('dashboard_settings_browser');
const chromium = useDashboardBrowser(db);
let browser: Browser;
let server: { app: FastifyInstance; url: string };
beforeAll(() => {
  ({ browser, server } = chromium.started());
});

test('the owner adds a wallet by signing the challenge with an injected browser wallet, as the default, and sets the payment settings', async () => {
  const { merchantId, owner } = await newMerchantWithOwner(db.store, { name: 'Wallet Shop' });
  const account = privateKeyToAccount(generatePrivateKey());
  const context = await browser.newContext();
  const signed: string[] = [];
  // The wallet's key stays in the test process; the page reaches it through an exposed function.
  await context.exposeFunction('__testWalletSign', async (message: `0x${string}`, address: string) => {
    if (address.toLowerCase() !== account.address.toLowerCase()) throw new Error(`unknown account ${address}`);
    signed.push(Buffer.from(message.slice(2), 'hex').toString('utf8'));
    return account.signMessage({ message: { raw: message } });
  });
  await context.addInitScript(`window.ethereum = {
    isTestWallet: true,
    request: async ({ method, params }) => {
      if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [${JSON.stringify(account.address)}];
      if (method === 'personal_sign') return window.__testWalletSign(params[0], params[1]);
      throw Object.assign(new Error('unsupported method ' + method), { code: 4200 });
    },
  };`);
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  page.setDefaultTimeout(8000);
  await signInInBrowser(page, server.url, owner.email);
  await page.getByRole('button', { name: 'Switch to live data' }).click();
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByLabel('Chain', { exact: true }).selectOption('polygon');
  await saveDashboardScreenshots(page, 'settings');

  await page.getByRole('button', { name: "Use my browser wallet's address" }).click();
  await expect.poll(() => page.getByLabel('Address', { exact: true }).inputValue()).toBe(account.address);
  await page.getByRole('button', { name: 'Next: prove it is yours' }).click();
  await page.locator('#challenge-message').waitFor();
  const message = (await page.locator('#challenge-message').textContent())!;
  expect(message).toContain(`Address: ${account.address}`);
  await page.getByLabel('Make it the default wallet for polygon').check();
  await saveDashboardScreenshots(page, 'settings-sign');
  await page.getByRole('button', { name: 'Sign with my browser wallet' }).click();
  await page.waitForURL(`${server.url}/dashboard/settings?done=added`);
  expect(signed).toEqual([message]);
  await expect(page.locator('.notice').textContent()).resolves.toBe('Wallet added and verified.');
  const row = page.locator('tbody tr', { hasText: account.address });
  await expect(row.textContent()).resolves.toMatch(/Verified.*eip191.*Default/s);
  expect(await listWallets(db.store, { merchantId })).toMatchObject([
    { chain: 'polygon', address: account.address, verified: true, verificationMethod: 'eip191', isDefault: true },
  ]);
  const { rows } = await db.store.query('SELECT action FROM audit_log WHERE merchant_id = $1 AND action LIKE $2 ORDER BY id', [merchantId, 'wallet.%']);
  expect(rows.map((entry) => entry.action)).toEqual(['wallet.added', 'wallet.default_set']);

  await page.getByLabel('Payment tolerance (basis points of the due amount)').fill('50');
  await page.getByLabel('Accept bridged tokens (USDC.e and others) where a chain lists them').check();
  await page.getByRole('button', { name: 'Save payment settings' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Payment settings saved.');
  expect(await getMerchantSettings(db.store, merchantId)).toMatchObject({ paymentToleranceBps: 50, acceptBridgedTokens: true });
  await saveDashboardScreenshots(page, 'settings-wallet-added');
  expect(problems).toEqual([]);
  await context.close();
}, 90_000);

import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import type { Address } from 'viem';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { collectPageProblems, decodeQr, launchChromium } from '../helpers/browser.ts';
import { newMerchantWithOwner, saveDashboardScreenshots, signInInBrowser, startDashboardServer } from '../helpers/dashboard.ts';
import { confirmedPaymentWithRefund, newCustomerAddress } from '../helpers/dashboardMoney.ts';
import { newEvmWallet, setHead, usdc } from '../helpers/engine.ts';

/**
 * Paying a refund from the dashboard, non-custodially, on anvil (polygon's chain id and real USDC
 * address): the page shows the refund as an EIP-681 request (QR code decoded from a real
 * screenshot), the merchant's wallet sends the token transfer, and the merchant records its hash;
 * the gateway reads the transaction through its RPC lookups before completing the refund. The
 * chain head the confirmation rule counts from is stored as the ingester stores it.
 */
const db = useTestDatabase('dashboard_refunds_browser');
let anvil: Anvil;
let browser: Browser;
let server: { app: FastifyInstance; url: string };

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'polygon' });
  await anvil.installChainTokens();
  server = await startDashboardServer(db.store, { SVC_POLYGON_RPC_URL: anvil.rpcUrl });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.app.close();
  await anvil?.stop();
});

const refundRow = async (id: string) =>
  (await db.store.query<{ status: string; tx_hash: string | null }>('SELECT status, tx_hash FROM refunds WHERE id = $1', [id])).rows[0]!;
/** The ingester's view of the head: anvil's current block. */
const storeHead = async () => setHead(db.store, { head: await anvil.blockNumber() });

test('a refund is paid from the merchant wallet on anvil and completed by hash, verified on chain; a wrong transaction is refused and changes nothing', async () => {
  const token = usdc() as Address;
  const wallet = newEvmWallet() as Address;
  const customer = newCustomerAddress() as Address;
  const { merchantId, owner } = await newMerchantWithOwner(db.store, { name: 'Refund Shop' });
  const { refund } = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: true, wallet, address: customer, refund: '5' });
  await anvil.waitMined(await anvil.mint(token, wallet, 20_000_000n));

  const context = await browser.newContext();
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  page.setDefaultTimeout(8000);
  await signInInBrowser(page, server.url, owner.email);
  await page.getByRole('button', { name: 'Switch to live data' }).click();
  await page.getByRole('link', { name: 'Refunds' }).click();
  await page.getByRole('link', { name: refund.id }).waitFor();
  await saveDashboardScreenshots(page, 'refunds-list');
  await page.getByRole('link', { name: refund.id }).click();

  // The wallet request pays exactly the refund, from the wallet that received the payment.
  const request = `ethereum:${token}@137/transfer?address=${customer}&uint256=5000000`;
  expect(await decodeQr(page)).toBe(request);
  expect(await page.locator('#wallet-link').getAttribute('href')).toBe(request);
  await saveDashboardScreenshots(page, 'refund-pay');

  // The merchant's wallet first sends the wrong amount, then the right one.
  const wrong = await anvil.transfer(token, wallet, customer, 4_000_000n);
  await anvil.waitMined(wrong);
  const right = await anvil.transfer(token, wallet, customer, 5_000_000n);
  await anvil.waitMined(right);
  await storeHead();

  await page.getByLabel('Transaction hash').fill(wrong);
  await page.getByRole('button', { name: 'Complete the refund' }).click();
  const error = page.locator('.form-error');
  await expect(error.textContent()).resolves.toBe(
    `transaction ${wrong} does not pay this refund: it must transfer exactly 5 USDC (5000000 base units) from the payment's receiving wallet ${wallet} to ${customer}; it transfers 4 USDC from ${wallet} to ${customer}`,
  );
  await saveDashboardScreenshots(page, 'refund-refused');
  expect(await refundRow(refund.id)).toEqual({ status: 'requested', tx_hash: null });

  // The right transaction, one block deep: not confirmed yet (polygon's rule: 32 blocks).
  await page.getByLabel('Transaction hash').fill(right);
  await page.getByRole('button', { name: 'Complete the refund' }).click();
  await expect(page.locator('.form-error').textContent()).resolves.toBe(
    `transaction ${right} pays this refund but is not confirmed yet: complete the refund again once it is 32 blocks deep (now 1)`,
  );
  expect(await refundRow(refund.id)).toEqual({ status: 'requested', tx_hash: null });

  await anvil.mine(31);
  await storeHead();
  await page.getByLabel('Transaction hash').fill(right);
  await page.getByRole('button', { name: 'Complete the refund' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Refund completed: its transaction was verified.');
  expect(await refundRow(refund.id)).toEqual({ status: 'completed', tx_hash: right });
  expect(await anvil.balanceOf(token, customer)).toBe(9_000_000n);
  await saveDashboardScreenshots(page, 'refund-completed');

  const { rows } = await db.store.query('SELECT action, target, details FROM audit_log WHERE merchant_id = $1 AND action = $2', [
    merchantId,
    'refund.completed',
  ]);
  expect(rows).toEqual([{ action: 'refund.completed', target: refund.id, details: { txHash: right, amount: '5.00 USDC', to: customer } }]);
  // The two refusals are pages answered with their status (400, then 409); nothing else went wrong.
  expect(problems).toEqual([
    'console: Failed to load resource: the server responded with a status of 400 (Bad Request)',
    'console: Failed to load resource: the server responded with a status of 409 (Conflict)',
  ]);
  await context.close();
}, 90_000);

test('the refund is sent from a browser wallet (EIP-1193 eth_sendTransaction) on anvil, its hash filled in, and completed once confirmed', async () => {
  const token = usdc() as Address;
  const wallet = newEvmWallet() as Address;
  const customer = newCustomerAddress() as Address;
  const { merchantId, owner } = await newMerchantWithOwner(db.store, { name: 'Wallet Refunds' });
  const { refund } = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: true, wallet, address: customer, refund: '2.5' });
  await anvil.waitMined(await anvil.mint(token, wallet, 10_000_000n));

  const context = await browser.newContext();
  const calls: string[] = [];
  // The injected wallet holds the receiving wallet's account: anvil impersonates it, so the
  // transaction the page asks for is really sent and mined.
  await context.exposeFunction('__testWalletRequest', async (method: string, params: unknown[]) => {
    calls.push(method);
    if (method === 'eth_requestAccounts') return [wallet];
    if (method === 'eth_chainId') return `0x${anvil.chainId.toString(16)}`;
    if (method === 'eth_sendTransaction') {
      await anvil.client.impersonateAccount({ address: wallet });
      await anvil.client.setBalance({ address: wallet, value: 10n ** 18n });
      return anvil.client.request({ method: 'eth_sendTransaction' as never, params: params as never });
    }
    throw new Error(`unsupported method ${method}`);
  });
  await context.addInitScript(`window.ethereum = { request: ({ method, params }) => window.__testWalletRequest(method, params || []) };`);
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  page.setDefaultTimeout(8000);
  await signInInBrowser(page, server.url, owner.email);
  await page.getByRole('button', { name: 'Switch to live data' }).click();
  await page.goto(`${server.url}/dashboard/refunds/${refund.id}`);
  await page.getByRole('button', { name: 'Send with my browser wallet' }).click();
  await expect.poll(() => page.getByLabel('Transaction hash').inputValue()).toMatch(/^0x[0-9a-f]{64}$/);
  const hash = (await page.getByLabel('Transaction hash').inputValue()) as `0x${string}`;
  expect(calls).toEqual(['eth_requestAccounts', 'eth_chainId', 'eth_sendTransaction']);
  await anvil.waitMined(hash);
  expect(await anvil.balanceOf(token, customer)).toBe(2_500_000n);

  await anvil.mine(32);
  await storeHead();
  await page.getByRole('button', { name: 'Complete the refund' }).click();
  await expect(page.locator('.notice').textContent()).resolves.toBe('Refund completed: its transaction was verified.');
  expect(await refundRow(refund.id)).toEqual({ status: 'completed', tx_hash: hash });
  expect(problems).toEqual([]);
  await context.close();
}, 90_000);

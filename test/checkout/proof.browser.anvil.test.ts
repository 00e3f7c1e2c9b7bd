import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { newMerchant, WALLET } from '../helpers/api.ts';
import { makeSession } from '../helpers/checkoutSessions.ts';
import { collectPageProblems, launchChromium, startCheckoutServer, VIEWPORTS, waitTextContains } from '../helpers/browser.ts';
import { USDC } from '../helpers/proofDaemon.ts';

/**
 * The checkout page's "prove it" form in Chromium: the payer pastes the transaction, the page asks
 * the browser wallet (an EIP-1193 provider injected into the page, backed by the payer's key) for
 * a `personal_sign` of the proof message, and the gateway binds the transaction (anvil as polygon).
 */
const db = useTestDatabase('checkout_proof_browser');
let anvil: Anvil;
let browser: Browser;
let server: { app: FastifyInstance; url: string };

beforeAll(async () => {
  [anvil, browser] = await Promise.all([startAnvil({ chain: 'polygon' }), launchChromium()]);
  await anvil.installChainTokens();
  server = await startCheckoutServer(db.store, { SVC_POLYGON_RPC_URL: anvil.rpcUrl });
});
afterAll(async () => {
  await browser?.close();
  await server?.app.close();
  await anvil?.stop();
});

test('a payer proves an unmatched payment from the page with the wallet that sent it; another account is told whose signature is needed', async () => {
  const merchant = await newMerchant(db.store, 'Proof Supplies');
  const [first] = await Promise.all(
    [0, 1].map(() => makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '10', livemode: true })),
  );
  await db.store.query('UPDATE merchants SET payment_tolerance_bps = 100 WHERE id = $1', [merchant.id]);
  const payer = privateKeyToAccount(generatePrivateKey());
  const other = privateKeyToAccount(generatePrivateKey());
  await anvil.waitMined(await anvil.mint(USDC, payer.address, 9_990_000n));
  const hash = await anvil.transfer(USDC, payer.address, WALLET as Address, 9_990_000n);
  await anvil.waitMined(hash);

  const context = await browser.newContext({ viewport: { width: VIEWPORTS.phone.width, height: VIEWPORTS.phone.height } });
  let signer = other;
  const signed: string[] = [];
  await context.exposeFunction('__testWalletSign', async (raw: Hex) => {
    signed.push(Buffer.from(raw.slice(2), 'hex').toString('utf8'));
    return signer.signMessage({ message: { raw } });
  });
  await context.exposeFunction('__testWalletAccount', async () => signer.address);
  // A minimal EIP-1193 provider, as a browser wallet injects it; the key stays in the test process.
  await context.addInitScript({
    content: `window.ethereum = {
      request: async ({ method, params }) => {
        if (method === 'eth_requestAccounts') return [await window.__testWalletAccount()];
        if (method === 'personal_sign') return window.__testWalletSign(params[0]);
        throw new Error('unsupported ' + method);
      },
    };`,
  });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  await page.goto(`${server.url}/checkout/${first!.id}`);
  await page.locator('#prove-details summary').click();
  await page.locator('#prove-tx').fill(hash.toUpperCase().replace('0X', '0x'));
  await page.locator('#prove-form button[type="submit"]').click();
  await waitTextContains(page.locator('#prove-error'), `by the transfer's sender ${payer.address}`);
  expect(signed[0]).toBe(
    ['svc gateway: I sent this payment', `Gateway: ${server.url}`, `Session: ${first!.id}`, 'Chain: polygon', `Transaction: ${hash.toLowerCase()}`].join('\n'),
  );
  expect((await db.store.query('SELECT 1 FROM transaction_claims WHERE tx_hash = $1', [hash.toLowerCase()])).rowCount).toBe(0);

  signer = payer;
  await page.locator('#prove-form button[type="submit"]').click();
  await waitTextContains(page.locator('#prove-result'), `transaction ${hash.toLowerCase()} is claimed for this session`);
  expect(await page.locator('#prove-details').isHidden()).toBe(true);
  expect((await db.store.query('SELECT session_id FROM transaction_claims WHERE tx_hash = $1', [hash.toLowerCase()])).rows).toEqual([
    { session_id: first!.id },
  ]);
  // The one failed request is the refused first attempt (403), shown on the page as it should be.
  expect(problems).toEqual(['console: Failed to load resource: the server responded with a status of 403 (Forbidden)']);
  await context.close();
});

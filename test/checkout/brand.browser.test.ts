import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, WALLET } from '../helpers/api.ts';
import { png } from '../helpers/images.ts';
import { insertTransfer, setHead } from '../helpers/engine.ts';
import { collectPageProblems, launchChromium, saveScreenshot, startCheckoutServer, VIEWPORTS, waitText } from '../helpers/browser.ts';
import { setMerchantBrand, setMerchantLogo } from '../../src/accounts/index.ts';
import { createSession } from '../../src/payments/sessions.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';

/**
 * The merchant's brand and what is being bought, in Chromium: logo (from the gateway's origin),
 * accent colour with contrasting text, items and support contacts on the checkout page; once
 * paid (the real engine), the receipt page with the transaction's explorer link. No CSP errors.
 */
const db = useTestDatabase('checkout_brand_browser');
let browser: Browser;
let server: { app: FastifyInstance; url: string };

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startCheckoutServer(db.store)]);
});
afterAll(async () => {
  await browser?.close();
  await server?.app.close();
});

test('a branded checkout shows the logo, colour, items and support; the receipt shows the payment and prints', async () => {
  const m = await newMerchant(db.store, 'Default merchant');
  await db.store.transaction(async (sql) => {
    await setMerchantBrand(
      sql,
      m.id,
      { name: 'Acme Coffee', accentColor: '#1b5e20', supportEmail: 'help@acme.example', supportUrl: 'https://acme.example/help' },
      { livemode: true },
    );
    await setMerchantLogo(sql, m.id, png(160, 48));
  });
  const session = await db.store.transaction((sql) =>
    createSession(sql, {
      merchantId: m.id,
      livemode: true,
      amount: '29.99',
      currency: 'USDC',
      chain: 'polygon',
      merchantWallet: WALLET,
      description: 'Order #1042',
      lineItems: [
        { name: 'Ethiopia Yirgacheffe 250 g', quantity: 2, unitAmount: '12.5' },
        { name: 'Shipping <b>fast</b>', quantity: 1, unitAmount: '4.99' },
      ],
      cancelUrl: 'https://shop.example/cart',
      monitorWindowSeconds: 3600,
    }),
  );

  const context = await browser.newContext({ viewport: VIEWPORTS.phone });
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  expect((await page.goto(`${server.url}/checkout/${session.id}`))?.status()).toBe(200);
  expect(await page.locator('#merchant-name').textContent()).toBe('Acme Coffee');
  await page.waitForFunction("document.getElementById('merchant-logo')?.naturalWidth === 160");
  expect(await page.locator('#description').textContent()).toBe('Order #1042');
  expect(await page.locator('#line-items tbody tr').allTextContents()).toEqual(['Ethiopia Yirgacheffe 250 g212.5025.00', 'Shipping <b>fast</b>14.994.99']);
  expect(await page.locator('#line-items tfoot').textContent()).toContain('29.99 USDC');
  expect(await page.locator('#support-email').getAttribute('href')).toBe('mailto:help@acme.example');
  expect(await page.locator('#support-url').getAttribute('href')).toBe('https://acme.example/help');
  expect(await page.locator('#cancel-link').getAttribute('href')).toBe('https://shop.example/cart');
  // The accent colour through the hash-pinned style block, white text on the dark green.
  const button = await page.evaluate(
    "[getComputedStyle(document.getElementById('wallet-link')).backgroundColor, getComputedStyle(document.getElementById('wallet-link')).color]",
  );
  expect(button).toEqual(['rgb(27, 94, 32)', 'rgb(255, 255, 255)']);
  await saveScreenshot(page, 'brand-checkout-phone');

  // Paid on chain and final: the real engine confirms it; the page offers the receipt.
  await insertTransfer(db.store, { to: WALLET, amount: session.amountDue, block: 100n, txHash: `0x${'ab'.repeat(32)}` });
  await setHead(db.store, { head: 200n, finalized: 200n });
  await createEngine({ store: db.store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) }).reconcile({
    chain: 'polygon',
    livemode: true,
  });
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!');
  expect(await page.locator('#cancel-link').isVisible()).toBe(false);
  await page.locator('#receipt-link').click();
  await page.waitForURL(`**/checkout/${session.id}/receipt`);
  expect(await page.locator('#amount-paid').textContent()).toBe('29.99');
  expect(await page.locator('#merchant-name').textContent()).toBe('Acme Coffee');
  expect(await page.locator('.tx-hash').allTextContents()).toEqual([`0x${'ab'.repeat(32)}`]);
  expect(await page.locator('.explorer-link').getAttribute('href')).toBe(`https://polygonscan.com/tx/0x${'ab'.repeat(32)}`);
  expect(await page.locator('#line-items tbody tr').count()).toBe(2);
  expect(await page.locator('#print').isVisible()).toBe(true);
  await page.waitForFunction("document.getElementById('merchant-logo')?.naturalWidth === 160");
  await saveScreenshot(page, 'brand-receipt-phone');
  await page.emulateMedia({ media: 'print' });
  expect(await page.locator('#print').isVisible()).toBe(false);
  await saveScreenshot(page, 'brand-receipt-print');
  expect(problems).toEqual([]);
  await context.close();
});

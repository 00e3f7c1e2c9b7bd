import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { useTestDatabase } from '../helpers/db.ts';
import { bearer, newMerchant, WALLET } from '../helpers/api.ts';
import { collectPageProblems, launchChromium, waitText } from '../helpers/browser.ts';
import { seriousAxeViolationsAtBothWidths, startSandboxServer } from '../helpers/a11y.ts';

/**
 * The customer's checkout in Chromium with the real engine and sandbox, audited by axe-core at
 * 1280 and 390 px in every state a customer meets (pending, partly paid, paid, receipt, expired),
 * and the page details issue 27 asked for: amounts in cents ("19.90 USDC"), copy buttons that say
 * "Copied", the sandbox that can pay the rest after "Pay half", and an expired page with a way back.
 */
const db = useTestDatabase('checkout_a11y_browser');
let browser: Browser;
let server: Awaited<ReturnType<typeof startSandboxServer>>;
let merchant: Awaited<ReturnType<typeof newMerchant>>;

beforeAll(async () => {
  [browser, server] = await Promise.all([launchChromium(), startSandboxServer(db.store)]);
  merchant = await newMerchant(db.store, 'Tea & Biscuits Ltd');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function api(path: string, body: unknown): Promise<Record<string, any>> {
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method: 'POST',
    headers: { ...bearer(merchant.test), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, any>;
  expect(response.status, JSON.stringify(json)).toBe(201);
  return json;
}

async function simulate(page: Page, outcome: string): Promise<void> {
  await page.locator('#sandbox-outcome').selectOption(outcome);
  await page.locator('#sandbox-pay').click();
  await page.waitForLoadState('load');
}

test('checkout pages pass axe at 1280 and 390 px: pending, paid, receipt, expired; amounts in cents, visible copy feedback, the rest payable, a way back', async () => {
  const link = await api('/payment-links', {
    amount: '19.9',
    currency: 'USDC',
    chain: 'polygon',
    merchantWallet: WALLET,
    description: 'Two tins of tea',
    lineItems: [{ name: 'Assam tin', quantity: 2, unitAmount: '9.95' }],
    cancelUrl: 'https://shop.example/cart',
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const problems = collectPageProblems(page);
  const violations: string[] = [];
  const t0 = Date.now();
  const step = (name: string) => process.env.A11Y_DEBUG && console.log(`${Date.now() - t0} ms: ${name}`);

  step('Pending: the amount in cents everywhere ');
  // Pending: the amount in cents everywhere people read it.
  await page.goto(link.url);
  await page.waitForURL(/\/checkout\/ses_\w+$/);
  await waitText(page.locator('#status'), 'Waiting for your payment.');
  expect(await page.locator('h1.amount').textContent()).toBe('19.90 USDC');
  expect(await page.locator('#pay-amount').textContent()).toBe('19.90');
  expect(await page.locator('#line-items tbody td.num').allTextContents()).toEqual(['2', '9.95', '19.90']);
  expect(await page.title()).toBe('Pay 19.90 USDC to Tea & Biscuits Ltd');
  violations.push(...(await seriousAxeViolationsAtBothWidths(page, 'pending')));

  step('Copy: the button itself says so (not onl');
  // Copy: the button itself says so (not only the screen-reader region), then is ready again.
  const copyAmount = page.getByRole('button', { name: 'Copy amount' });
  await copyAmount.click();
  await waitText(page.locator('button[data-copy="pay-amount"] .copy-label'), 'Copied', 2000);
  expect(await page.locator('button[data-copy="pay-amount"]').getAttribute('data-state')).toBe('copied');
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe('19.90');
  await waitText(page.locator('button[data-copy="pay-amount"] .copy-label'), 'Copy', 4000);

  step('Pay half: the page comes back (the half ');
  // Pay half: the page comes back (the half confirming), the simulator stays, and pays the rest.
  await simulate(page, 'underpaid');
  await waitText(page.locator('#status'), 'Partly paid: 9.95 USDC still to pay.', 15_000);
  expect(await page.locator('#remaining').textContent()).toBe('9.95');
  expect(await page.locator('#sandbox-pay').isVisible()).toBe(true);
  await simulate(page, 'exact');
  await waitText(page.locator('#status'), 'Payment confirmed. Thank you!', 15_000);
  expect(await page.locator('#sandbox-pay').isVisible()).toBe(false);
  violations.push(...(await seriousAxeViolationsAtBothWidths(page, 'paid')));

  step('The receipt.');
  // The receipt.
  await page.locator('#receipt-link').click();
  await page.waitForURL(/\/receipt$/);
  expect(await page.locator('#amount-paid').textContent()).toBe('19.90');
  violations.push(...(await seriousAxeViolationsAtBothWidths(page, 'receipt')));

  step('Another visit of the link, left to expir');
  // Another visit of the link, left to expire: the page offers the link again (a fresh session).
  await page.goto(link.url);
  await page.waitForURL(/\/checkout\/ses_\w+$/);
  const expiredUrl = page.url();
  await simulate(page, 'expired');
  await waitText(page.locator('#status'), 'This payment request has expired.', 15_000);
  const restart = page.locator('#restart-link');
  expect(await restart.isVisible()).toBe(true);
  expect(await restart.getAttribute('href')).toBe(`/pay/${link.id}`);
  expect(await page.locator('#expired-return-link').getAttribute('href')).toBe('https://shop.example/cart');
  violations.push(...(await seriousAxeViolationsAtBothWidths(page, 'expired')));
  await restart.click();
  await page.waitForURL(/\/checkout\/ses_\w+$/);
  expect(page.url()).not.toBe(expiredUrl);
  await waitText(page.locator('#status'), 'Waiting for your payment.');

  step('A session made by the API with a cancel ');
  // A session made by the API with a cancel URL: expired, the way back is the merchant's page.
  const payment = await api('/payments', { amount: '5', currency: 'USDC', chain: 'base', merchantWallet: WALLET, cancelUrl: 'https://shop.example/basket' });
  await page.goto(`${server.url}/checkout/${payment.id}`);
  expect(await page.locator('h1.amount').textContent()).toBe('5.00 USDC');
  await simulate(page, 'expired');
  await waitText(page.locator('#status'), 'This payment request has expired.', 15_000);
  expect(await page.locator('#restart-link').count()).toBe(0);
  const back = page.locator('#expired-return-link');
  expect(await back.isVisible()).toBe(true);
  expect(await back.getAttribute('href')).toBe('https://shop.example/basket');

  expect(violations).toEqual([]);
  expect(problems).toEqual([]);
  await context.close();
}, 300_000);

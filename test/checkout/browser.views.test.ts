import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, WALLET, SOLANA_WALLET } from '../helpers/api.ts';
import { makeSession, setSessionState } from '../helpers/checkoutSessions.ts';
import {
  collectPageProblems,
  decodeQr,
  waitText,
  waitTextContains,
  launchChromium,
  saveScreenshot,
  startCheckoutServer,
  startMerchantSite,
  VIEWPORTS,
} from '../helpers/browser.ts';

const db = useTestDatabase('checkout_browser');
let browser: Browser;
let server: { app: FastifyInstance; url: string };
let merchantSite: Awaited<ReturnType<typeof startMerchantSite>>;
let merchant: Awaited<ReturnType<typeof newMerchant>>;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  [browser, server, merchantSite] = await Promise.all([launchChromium(), startCheckoutServer(db.store), startMerchantSite()]);
  merchant = await newMerchant(db.store, 'Tea & Biscuits Ltd');
});
afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => {});
  await browser?.close();
  await server?.app.close();
  await merchantSite?.close();
});

async function open(url: string, viewport: keyof typeof VIEWPORTS = 'desktop'): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: VIEWPORTS[viewport].width, height: VIEWPORTS[viewport].height }, ...VIEWPORTS[viewport] });
  contexts.push(context);
  const page = await context.newPage();
  const problems = collectPageProblems(page);
  const response = await page.goto(url);
  expect(response?.status()).toBe(200);
  return { page, problems };
}

async function instructions(id: string) {
  const response = await fetch(`${server.url}/checkout/${id}`, { headers: { accept: 'application/json' } });
  return (await response.json()) as Record<string, any>;
}

describe('checkout page in Chromium', () => {
  test('renders the payment at phone and desktop widths; the QR decodes to the EIP-681 URI; copy buttons copy', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '42.5' });
    const expected = await instructions(session.id);
    for (const viewport of ['phone', 'desktop'] as const) {
      const { page, problems } = await open(`${server.url}/checkout/${session.id}`, viewport);
      await waitText(page.locator('#status'), 'Waiting for your payment.');
      expect(await page.locator('#merchant-name').textContent()).toBe('Tea & Biscuits Ltd');
      expect(await page.locator('#amount-due').textContent()).toBe('42.50');
      // A sandbox session pays to the merchant's sandbox address, never to the wallet given.
      expect(await page.locator('#pay-address').textContent()).toBe(session.payTo);
      expect(await page.locator('#wallet-link').getAttribute('href')).toBe(expected.paymentUri);
      expect(await page.locator('#test-mode').isVisible()).toBe(true);
      expect(await decodeQr(page)).toBe(expected.paymentUri);
      // The countdown runs: about an hour left, in h:mm:ss.
      await waitText(page.locator('#countdown'), /^(1:00:00|59:\d\d)$/);
      // Nothing overflows sideways on a phone.
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      await saveScreenshot(page, `awaiting-${viewport}`);
      expect(problems).toEqual([]);
    }

    // What a screen reader gets: the accessibility tree Chromium builds for the page.
    const { page: a11yPage } = await open(`${server.url}/checkout/${session.id}`, 'desktop');
    const tree = await a11yPage.locator('main').ariaSnapshot();
    for (const line of [
      '- heading "42.50 USDC" [level=1]',
      '- status: Waiting for your payment.',
      `- img "QR code of the wallet payment link for 42.50 USDC on Polygon"`,
      '- link "Open in wallet"',
      '- button "Copy amount"',
      '- button "Copy address"',
      '- timer:',
    ]) {
      expect(tree).toContain(line);
    }
    // Every form field has a label (the refund form, present though hidden until payment).
    expect(
      await a11yPage
        .locator('input:not([type=hidden]), textarea')
        .evaluateAll((fields) => fields.every((field) => (field as { labels: { length: number } }).labels.length > 0)),
    ).toBe(true);

    // Keyboard: the copy buttons are reachable and work from the keyboard.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    const page = await context.newPage();
    await page.goto(`${server.url}/checkout/${session.id}`);
    await page.getByRole('button', { name: 'Copy address' }).focus();
    await page.keyboard.press('Enter');
    await waitText(page.locator('#announce'), 'address copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(session.payTo);
    await page.getByRole('button', { name: 'Copy amount' }).focus();
    await page.keyboard.press('Space');
    await waitText(page.locator('#announce'), 'amount copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe('42.50');
  });

  test('solana: the QR decodes to the Solana Pay URI with the reference key', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'solana', merchantWallet: SOLANA_WALLET, amount: '3' });
    const expected = await instructions(session.id);
    const { page, problems } = await open(`${server.url}/checkout/${session.id}`, 'phone');
    const decoded = await decodeQr(page);
    expect(decoded).toBe(expected.paymentUri);
    expect(decoded).toContain(`reference=${session.reference}`);
    expect(await page.locator('#reference').textContent()).toBe(session.reference);
    await saveScreenshot(page, 'awaiting-solana-phone');
    expect(problems).toEqual([]);
  });

  test('status moves live: detected with confirmations N of M, underpaid with a new QR for the rest, then paid and redirected to successUrl', async () => {
    const session = await makeSession(db.store, {
      merchantId: merchant.id,
      chain: 'base',
      merchantWallet: WALLET,
      amount: '10',
      successUrl: `${merchantSite.url}/thanks?order=77`,
    });
    const { page, problems } = await open(`${server.url}/checkout/${session.id}`, 'phone');
    await waitText(page.locator('#status'), 'Waiting for your payment.');

    await setSessionState(db.store, session.id, { status: 'confirming', amountReceived: 6_000_000n, confirmations: 1, txHash: `0x${'12'.repeat(32)}` });
    await waitText(page.locator('#status'), `Payment detected: 1 of ${session.requiredConfirmations} confirmations.`);
    await setSessionState(db.store, session.id, { confirmations: 5 });
    await waitText(page.locator('#confirmations'), '5');
    await saveScreenshot(page, 'detected-phone');

    await setSessionState(db.store, session.id, { status: 'pending', confirmations: session.requiredConfirmations });
    await waitText(page.locator('#status'), 'Partly paid: 4.00 USDC still to pay.');
    await waitText(page.locator('#remaining'), '4.00');
    await waitText(page.locator('#pay-amount'), '4.00');
    const rest = await instructions(session.id);
    expect(rest.paymentUri).toMatch(/uint256=4000000$/);
    await page.waitForFunction(`document.getElementById('wallet-link').getAttribute('href') === ${JSON.stringify(rest.paymentUri)}`);
    await expect.poll(() => decodeQr(page)).toBe(rest.paymentUri);
    await saveScreenshot(page, 'underpaid-phone');

    await setSessionState(db.store, session.id, { status: 'confirmed', amountReceived: 10_000_000n });
    await waitText(page.locator('#status'), 'Payment confirmed. Thank you!');
    await page.locator('#redirect-note').waitFor({ state: 'visible' });
    await saveScreenshot(page, 'paid-phone');
    await page.waitForURL(`${merchantSite.url}/thanks?order=77`, { timeout: 10_000 });
    expect(merchantSite.visits).toContain('/thanks?order=77');

    // Coming back to the paid page later (to ask for a refund) does not bounce the payer away again.
    await page.goto(`${server.url}/checkout/${session.id}`);
    await waitText(page.locator('#status'), 'Payment confirmed. Thank you!');
    await page.locator('#refund').waitFor({ state: 'visible' });
    expect(await page.locator('#success-link').getAttribute('href')).toBe(`${merchantSite.url}/thanks?order=77`);
    await page.waitForTimeout(4_000);
    expect(page.url()).toBe(`${server.url}/checkout/${session.id}`);
    expect(problems).toEqual([]);
  });

  test('a page reached under another host name than SVC_PUBLIC_URL still gets live updates (same-origin paths)', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'polygon', merchantWallet: WALLET, amount: '2' });
    const otherOrigin = server.url.replace('127.0.0.1', 'localhost');
    const { page, problems } = await open(`${otherOrigin}/checkout/${session.id}`, 'desktop');
    await waitText(page.locator('#status'), 'Waiting for your payment.');
    expect(await decodeQr(page)).toBe((await instructions(session.id)).paymentUri);
    await setSessionState(db.store, session.id, { status: 'confirming', amountReceived: session.amountDue, confirmations: 2 });
    await waitText(page.locator('#status'), `Payment detected: 2 of ${session.requiredConfirmations} confirmations.`);
    expect(problems).toEqual([]);
  });

  test('the countdown reaching zero shows the expired view, and the server agrees', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'arbitrum', merchantWallet: WALLET, amount: '1' });
    // Long enough for a loaded machine to open the page before it expires, short enough to wait out.
    await setSessionState(db.store, session.id, { expiresInSeconds: 10 });
    const { page, problems } = await open(`${server.url}/checkout/${session.id}`, 'desktop');
    await page.locator('#pay').waitFor({ state: 'visible' });
    await page.getByRole('heading', { name: 'This payment request has expired' }).waitFor({ state: 'visible', timeout: 20_000 });
    await page.locator('#pay').waitFor({ state: 'hidden' });
    await waitText(page.locator('#status'), 'This payment request has expired.');
    expect((await instructions(session.id)).view).toBe('expired');
    await saveScreenshot(page, 'expired-desktop');
    await page.setViewportSize({ width: VIEWPORTS.phone.width, height: VIEWPORTS.phone.height });
    await page.reload();
    await waitText(page.locator('#status'), 'This payment request has expired.');
    await saveScreenshot(page, 'expired-phone');
    expect(problems).toEqual([]);
  });

  test('failed (expired underpaid) shows what arrived and lets the payer request a refund from the page', async () => {
    const session = await makeSession(db.store, { merchantId: merchant.id, chain: 'optimism', merchantWallet: WALLET, amount: '8' });
    await setSessionState(db.store, session.id, { status: 'failed', amountReceived: 3_000_000n, confirmations: 20, expiresInSeconds: -60 });
    const { page, problems } = await open(`${server.url}/checkout/${session.id}`, 'phone');
    await page.getByRole('heading', { name: 'Payment incomplete' }).waitFor({ state: 'visible' });
    await waitText(page.locator('#received'), '3.00');
    await waitText(page.locator('#remaining'), '5.00');
    await page.locator('#refund').waitFor({ state: 'visible' });
    await saveScreenshot(page, 'failed-phone');

    await page.getByLabel('Your OP Mainnet address for the refund').fill('not-an-address');
    await page.getByRole('button', { name: 'Request refund' }).click();
    await waitTextContains(page.locator('#refund-error'), 'is not a valid optimism address');

    const destination = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
    await page.getByLabel('Your OP Mainnet address for the refund').fill(destination);
    await page.getByLabel('Reason (optional)').fill('Sent too little, order cancelled');
    await page.getByRole('button', { name: 'Request refund' }).click();
    await waitTextContains(page.locator('#refund-result'), `send 3.00 USDC to ${destination}`);
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    await saveScreenshot(page, 'refund-requested-phone');
    const { rows } = await db.store.query(`SELECT type, payload FROM events WHERE session_id = $1 AND type = 'refund.requested'`, [session.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.payload.data).toMatchObject({ amount: '3', address: destination, reason: 'Sent too little, order cancelled' });
    expect(problems.filter((p) => !p.includes('400'))).toEqual([]);
  });

  test('a payment link (/pay/<id>) redirects to a working checkout page', async () => {
    const created = await fetch(`${server.url}/api/v1/payment-links`, {
      method: 'POST',
      headers: { authorization: `Bearer ${merchant.test}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '15', currency: 'USDT', chain: 'polygon', merchantWallet: WALLET }),
    });
    expect(created.status).toBe(201);
    const link = (await created.json()) as { url: string };
    const { page, problems } = await open(link.url.replace(/^https?:\/\/[^/]+/, server.url), 'desktop');
    expect(page.url()).toMatch(new RegExp(`^${server.url}/checkout/ses_[0-9A-Za-z]{20}$`));
    await waitText(page.locator('#amount-due'), /^15\.(00|0+1)$/);
    const id = page.url().split('/').pop()!;
    expect(await decodeQr(page)).toBe((await instructions(id)).paymentUri);
    await saveScreenshot(page, 'payment-link-desktop');
    expect(problems).toEqual([]);
  });
});

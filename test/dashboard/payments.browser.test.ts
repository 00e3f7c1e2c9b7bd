import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/anvil.ts';
import { box, GENEROUS_LIMITS } from '../helpers/api.ts';
import { insertTransfer } from '../helpers/engine.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { launchChromium, waitText } from '../helpers/browser.ts';
import { startSandboxEngine } from '../helpers/livePipeline.ts';
import { newMerchantWithOwner, saveDashboardScreenshots, signInInBrowser } from '../helpers/dashboard.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';

/**
 * The payments pages in Chromium, with the real engine and sandbox running: an owner creates a
 * payment link (copies its URL, sees its QR code); a payer opens it and pays with the sandbox;
 * the payments list and the payment's page, left open, follow the payment to confirmed without
 * a reload; the payment page shows the timeline and the transfer; search by metadata finds it;
 * the CSV export holds it. Screenshots of every page at 390 and 1280 px.
 */
const db = useTestDatabase('dashboard_payments_browser');
const logger = createLogger({ level: 'silent' });
let simulated: ReturnType<typeof startSandboxEngine>;
let browser: Browser;
let app: FastifyInstance;
let url: string;

beforeAll(async () => {
  const port = await freePort();
  const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', SVC_SANDBOX_BLOCK_MS: '20' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  simulated = startSandboxEngine({ store: db.store, logger, metrics, config, blockMs: 20, intervalMs: 200 });
  const { sandbox } = simulated;
  app = createHttp({ store: db.store, logger, metrics, config, box, sandbox, rateLimits: GENEROUS_LIMITS });
  await app.listen({ port, host: '127.0.0.1' });
  url = config.publicUrl;
  browser = await launchChromium();
});
afterAll(async () => {
  await simulated?.close();
  await browser?.close();
  await app?.close();
});

/**
 * Script errors and CSP violations a page reports. The browser's own /favicon.ico request (the
 * daemon serves none) is not the page's.
 */
function pageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** The status badges of the payment page's timeline, in order. */
const timelineStatuses = (page: Page) => page.locator('ol.timeline li.step .step-status').allTextContents();

describe('payments pages in Chromium', () => {
  test('link created and copied; a sandbox payment moves the open list and payment page live; timeline, transfer, search and CSV', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store, { name: 'Live Feed Coffee' });
    const context: BrowserContext = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
    const list = await context.newPage();
    const problems = pageProblems(list);
    await signInInBrowser(list, url, owner.email);

    // Create a payment link; its URL is copied with the button, its QR code is an image.
    await list.goto(`${url}/dashboard/links`);
    await list.getByLabel('Amount in stablecoin', { exact: true }).fill('4.20');
    // Every pair the merchant receives is ticked; one pair left makes a link without a choice.
    for (const box of await list.locator('#create-link ul.pair-list input[type="checkbox"]').all()) await box.uncheck();
    await list.getByLabel('USDC on base', { exact: true }).check();
    await list.getByLabel('Metadata (one key=value a line, optional)').fill('order=ORD-77\nsku=mug');
    await list.getByRole('button', { name: 'Create link' }).click();
    await waitText(list.locator('.notice'), /^Payment link plink_\w+ created\./);
    const card = list.locator('li.link-card.created');
    const linkUrl = (await card.locator('code[id^="url-"]').textContent())!.trim();
    expect(linkUrl).toMatch(new RegExp(`^${url}/pay/plink_\\w+$`));
    await card.getByRole('button', { name: /Copy URL/ }).click();
    await waitText(card.getByRole('button', { name: /Copied|Copy URL/ }), /Copied/);
    expect(await list.evaluate('navigator.clipboard.readText()')).toBe(linkUrl);
    const qr = card.locator('img.qr');
    await qr.waitFor({ state: 'visible' });
    expect(
      await qr.evaluate(
        (image) =>
          (image as unknown as { complete: boolean; naturalWidth: number }).complete && (image as unknown as { naturalWidth: number }).naturalWidth > 0,
      ),
    ).toBe(true);
    await saveDashboardScreenshots(list, 'links');

    // The payments list, open before anything is paid; a marker on window shows it never reloads.
    await list.setViewportSize({ width: 1280, height: 900 });
    await list.goto(`${url}/dashboard/payments`);
    await expect.poll(() => list.locator('p.empty').textContent()).toBe('No payments match.');
    await list.evaluate('window.__notReloaded = true');

    // A payer visits the link (a fresh checkout) ...
    const payer = await context.newPage();
    await payer.goto(linkUrl);
    await payer.waitForURL(/\/checkout\/ses_\w+$/);
    const sessionId = new URL(payer.url()).pathname.split('/').pop()!;
    const row = list.locator(`tr[data-payment="${sessionId}"]`);
    // A visit without payment is not a payment (issue 27): the open list counts it apart, live, and lists it on demand.
    await waitText(list.locator('#link-visits'), /^1 payment-link visit without payment is not counted as a payment\./, 15_000);
    expect(await row.count()).toBe(0);

    // ... the payment's page is open in another tab when the sandbox pays it.
    const detail = await context.newPage();
    const detailProblems = pageProblems(detail);
    await detail.goto(`${url}/dashboard/payments?visits=only`);
    await waitText(detail.locator(`tr[data-payment="${sessionId}"] .badge.status`), 'pending');
    await detail.goto(`${url}/dashboard/payments/${sessionId}`);
    await waitText(detail.locator('.payment-status .badge'), 'pending');
    await detail.evaluate('window.__notReloaded = true');
    await payer.locator('#sandbox-outcome').selectOption('exact');
    await payer.locator('#sandbox-pay').click();

    // Simulated blocks are 20 ms, so the payment may be settled (final) by the next poll.
    await waitText(row.locator('.badge.status'), /^(confirmed|settled)$/, 20_000);
    await waitText(detail.locator('.payment-status .badge'), /^(confirmed|settled)$/, 20_000);
    expect(await list.evaluate('window.__notReloaded')).toBe(true);
    expect(await detail.evaluate('window.__notReloaded')).toBe(true);
    expect(await row.textContent()).toContain('4.2');

    // The timeline: created (Interface B: pending) -> confirming -> confirmed (-> settled once final); the transfer and confirmations.
    const statuses = (await timelineStatuses(detail)).map((text) => text.trim());
    expect(statuses.slice(0, 3)).toEqual(['pending', 'confirming', 'confirmed']);
    const steps = await detail.locator('ol.timeline li.step strong').allTextContents();
    expect(steps.slice(0, 3)).toEqual(['Created', 'payment.confirming', 'payment.confirmed']);
    expect(steps.slice(3)).toEqual(statuses[3] ? ['payment.settled'] : []);
    const transfer = detail.locator('#payment-live table tbody tr');
    await expect.poll(() => transfer.count()).toBe(1);
    expect(await transfer.textContent()).toContain('4.2');
    expect(await transfer.locator('td.tx').textContent()).toContain('(simulated)');
    expect(await detail.locator('.confirmation-count').textContent()).toMatch(/^\d+ \(12 required\)$/);
    await saveDashboardScreenshots(detail, 'payment');

    // Search by a metadata value finds it (and only it).
    await list.getByLabel('Search').fill('ORD-77');
    await list.getByRole('button', { name: 'Apply' }).click();
    await list.waitForURL(/q=ORD-77/);
    expect(await list.locator('tr[data-payment]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-payment')))).toEqual([sessionId]);
    await saveDashboardScreenshots(list, 'payments');

    // The CSV export of that search.
    const [download] = await Promise.all([list.waitForEvent('download'), list.getByRole('link', { name: 'Export CSV' }).click()]);
    const csv = fs.readFileSync((await download.path())!, 'utf8').split('\r\n');
    expect(csv).toHaveLength(3);
    expect(csv[1]).toContain(`"${sessionId}"`);
    expect(csv[1]).toMatch(/"(confirmed|settled)","base","USDC","4.2","4200000"/);
    expect(csv[1]).toContain('ORD-77');

    // Home: the chart drawn by the asset script (uPlot), counts, listener health, recent payments.
    await list.goto(`${url}/dashboard`);
    await list.locator('.volume-chart canvas').first().waitFor({ state: 'attached' });
    const counts = await list.locator('ul.counts a').allTextContents();
    const nonZero = counts.map((text) => text.replace(/\s+/g, ' ').trim()).filter((text) => !text.startsWith('0 '));
    expect(nonZero).toHaveLength(1);
    expect(nonZero[0]).toMatch(/^1 (confirmed|settled)$/);
    expect(await list.locator('table.health tbody tr').count()).toBe(6);
    expect(await list.locator(`table.payments tr[data-payment="${sessionId}"]`).count()).toBe(1);
    await saveDashboardScreenshots(list, 'home');
    // A 7 USDC transfer no payment waits for: the engine leaves it unmatched, and the page lists it with the attribute form.
    const { rows: heads } = await db.store.query<{ processed_block: string }>(
      "SELECT processed_block::text FROM chain_heads WHERE livemode = false AND chain = 'base'",
    );
    const stray = await insertTransfer(db.store, {
      chain: 'base',
      livemode: false,
      to: sandboxWallet('base', merchantId),
      amount: 7_000_000n,
      block: BigInt(heads[0]!.processed_block),
    });
    await expect
      .poll(
        async () => {
          await list.goto(`${url}/dashboard/unmatched`);
          return list.locator(`tr[id="trf_${stray.id}"]`).count();
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    await saveDashboardScreenshots(list, 'unmatched');

    // An underpaid payment stays open (pending until it expires): its page keeps polling, and a
    // delivery list the person opened stays open across the refreshes.
    await payer.goto(linkUrl);
    await payer.waitForURL(/\/checkout\/ses_\w+$/);
    const underpaidId = new URL(payer.url()).pathname.split('/').pop()!;
    await payer.locator('#sandbox-outcome').selectOption('underpaid');
    await payer.locator('#sandbox-pay').click();
    await detail.goto(`${url}/dashboard/payments/${underpaidId}`);
    await expect
      .poll(async () => (await detail.locator('ol.timeline li.step strong').allTextContents()).includes('payment.underpaid'), { timeout: 20_000 })
      .toBe(true);
    const firstDeliveries = detail.locator('ol.timeline details').first();
    await firstDeliveries.locator('summary').click();
    for (let polls = 0; polls < 2; polls++) await detail.waitForResponse((response) => response.url().endsWith(`/payments/${underpaidId}/live`));
    await detail.waitForTimeout(100);
    expect(await firstDeliveries.evaluate((element) => (element as unknown as { open: boolean }).open)).toBe(true);
    expect(await detail.locator('.payment-status .badge').textContent()).toBe('pending');

    expect([...problems, ...detailProblems]).toEqual([]);
    await context.close();
  });
});

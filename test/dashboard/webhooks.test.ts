import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { createDelivery, type Delivery } from '../../src/delivery/index.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { verifyWebhook } from '../../src/receiver/verify.ts';
import { box } from '../helpers/api.ts';
import { launchChromium } from '../helpers/browser.ts';
import { addUserWithPassword, newMerchantWithOwner, saveDashboardScreenshots, signInInBrowser, startDashboardServer } from '../helpers/dashboard.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { startReceiver } from '../helpers/webhookReceiver.ts';

/**
 * The Webhooks pages in Chromium, against a real local receiver: a failed delivery resent from
 * the page arrives and verifies, a rotated secret's overlap carries both signatures, and a test
 * event arrives. The delivery stage runs in the test (runOnce), so each send happens exactly when
 * the test says; sandbox endpoints may use loopback by default (SVC_WEBHOOK_ALLOW_PRIVATE).
 */
const db = useTestDatabase('dashboard_webhooks_e2e');
let server: { app: FastifyInstance; url: string };
let browser: Browser;
let delivery: Delivery;
beforeAll(async () => {
  server = await startDashboardServer(db.store);
  browser = await launchChromium();
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  expect(config.webhookAllowPrivateSandbox).toBe('loopback');
  delivery = createDelivery({
    store: db.store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config,
    box,
  });
}, 60_000);
afterAll(async () => {
  await delivery?.stop();
  await browser?.close();
  await server?.app.close();
});

/** The secret the page shows once. */
const shownSecret = async (page: Page) => (await page.locator('#new-secret').textContent())!.trim();

describe('dashboard webhooks in Chromium', () => {
  test('a developer adds an endpoint, resends a failed delivery that then verifies, rotates with an overlap, and a test event arrives', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    let failing = true;
    const receiver = await startReceiver(() => (failing ? { status: 500, body: 'receiver down' } : { status: 200, body: '{"ok":true}' }));
    const page = await browser.newPage();
    try {
      await signInInBrowser(page, server.url, developer.email);
      await page.goto(`${server.url}/dashboard/webhooks`);
      await page.getByLabel('Endpoint URL').fill(`${receiver.url}/hooks`);
      await page.getByLabel('Description (optional)').fill('Order service');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByRole('heading', { name: 'New signing secret' }).waitFor();
      const firstSecret = await shownSecret(page);
      expect(firstSecret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
      // The secret is the answer of the POST, never a page one could open again.
      expect(new URL(page.url()).pathname).toBe('/dashboard/webhooks');
      const endpointId = (await page.locator('dl.facts code').nth(1).textContent())!.trim();
      expect(endpointId).toMatch(/^we_/);

      // A test event, which the receiver refuses: the delivery fails and shows the 500.
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByText('Test event queued').waitFor();
      expect(await delivery.runOnce()).toBe(1);
      await receiver.waitFor(1);
      const refused = receiver.received[0]!;
      const refusedEvent = await verifyWebhook(refused.rawBody, refused.headers, firstSecret);
      expect(refusedEvent.event).toBe('webhook_endpoint.test');
      await page.reload();
      const firstRow = page.locator('tbody tr').first();
      expect(await firstRow.textContent()).toContain('500');
      expect(await firstRow.textContent()).toContain('pending');
      await saveDashboardScreenshots(page, 'webhooks-endpoint');

      // The attempt as the developer sees it: request headers, which signatures (not their values), the response.
      await firstRow.getByRole('link').click();
      await page.getByRole('heading', { name: /Attempt 1: failed \(HTTP 500\)/ }).waitFor();
      const attemptText = (await page.locator('article.attempt').textContent())!;
      expect(attemptText).toContain('x-service-nonce');
      expect(attemptText).toContain('1 signature (sha256, the current secret)');
      expect(attemptText).toContain('receiver down');
      expect(await page.content()).not.toContain(String(refused.headers['x-service-signature']).slice(7));
      await saveDashboardScreenshots(page, 'webhooks-delivery');

      // The receiver is fixed; the developer resends from the page: it arrives and verifies.
      failing = false;
      await page.getByRole('button', { name: 'Resend' }).click();
      await page.waitForURL((url) => !url.pathname.endsWith(refused.headers['x-service-delivery-id'] as string));
      const resentId = new URL(page.url()).pathname.split('/').pop()!;
      expect(resentId).toMatch(/^whd_/);
      await delivery.runOnce();
      const resent = receiver.received.find((request) => request.headers['x-service-delivery-id'] === resentId);
      expect(resent, 'the resent delivery reached the receiver').toBeDefined();
      const resentEvent = await verifyWebhook(resent!.rawBody, resent!.headers, firstSecret);
      expect(resentEvent.id).toBe(refusedEvent.id);
      await page.reload();
      await page.getByRole('heading', { name: /Attempt 1: delivered \(HTTP 200\)/ }).waitFor();

      // Rotation with the default 24 h overlap: the next delivery carries both signatures.
      await page.goto(`${server.url}/dashboard/webhooks/${endpointId}`);
      await page.getByLabel('Old secret keeps signing for').selectOption({ label: '24 hours (default)' });
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('heading', { name: 'New signing secret' }).waitFor();
      const secondSecret = await shownSecret(page);
      expect(secondSecret).not.toBe(firstSecret);
      expect(await page.getByText('The previous secret keeps signing beside it until').count()).toBe(1);

      // A test event during the overlap: it arrives, verifies with the old and with the new secret.
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page.getByText('Test event queued').waitFor();
      const before = receiver.received.length;
      await delivery.runOnce();
      await receiver.waitFor(before + 1);
      const overlap = receiver.received.find((request, index) => index >= before && JSON.parse(request.rawBody).event === 'webhook_endpoint.test')!;
      expect(String(overlap.headers['x-service-signature']).split(',')).toHaveLength(2);
      const withOld = await verifyWebhook(overlap.rawBody, overlap.headers, firstSecret);
      const withNew = await verifyWebhook(overlap.rawBody, overlap.headers, secondSecret);
      expect(withNew.id).toBe(withOld.id);
      expect(withNew.event).toBe('webhook_endpoint.test');
      expect(withNew.data).toMatchObject({ test: true, endpointId });
      expect(withNew.livemode).toBe(false);
      await page.reload();
      await page.locator('tbody tr').first().getByRole('link').click();
      await page
        .getByText(/2 signatures \(sha256: the new secret's first/)
        .first()
        .waitFor();

      await page.goto(`${server.url}/dashboard/webhooks`);
      await page.getByRole('link', { name: `${receiver.url}/hooks` }).waitFor();
      await saveDashboardScreenshots(page, 'webhooks-list');

      const audit = await db.store.query<{ action: string; actor: string }>(
        'SELECT action, actor FROM audit_log WHERE merchant_id = $1 AND target = $2 ORDER BY id',
        [merchantId, endpointId],
      );
      expect(audit.rows.map((row) => row.action)).toEqual(['webhook.endpoint_created', 'webhook.redelivered', 'webhook.secret_rotated']);
      expect(new Set(audit.rows.map((row) => row.actor))).toEqual(new Set([developer.email]));
    } finally {
      await page.close();
      await receiver.close();
    }
  }, 120_000);
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Browser } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/anvil.ts';
import { launchChromium, saveScreenshot, waitText } from '../helpers/browser.ts';
import { box, GENEROUS_LIMITS } from '../helpers/api.ts';
import { startSandboxEngine } from '../helpers/livePipeline.ts';
import { createHttp } from '../../src/http.ts';
import { createApiKey, createMerchant } from '../../src/accounts/index.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createDelivery } from '../../src/delivery/index.ts';
import { main } from '../../src/cli/main.ts';

/**
 * The README's quick start, end to end with nothing but a test key: create a session, open its
 * checkout page in Chromium, press "Simulate payment", watch the page confirm, and receive the
 * signed `payment.confirmed` webhook in `svc webhooks listen`, which verifies it.
 */
const db = useTestDatabase('sandbox_quickstart');
const logger = createLogger({ level: 'silent' });
let simulated: ReturnType<typeof startSandboxEngine>;
let browser: Browser;
let app: FastifyInstance;
let url: string;
let delivery: ReturnType<typeof createDelivery>;

beforeAll(async () => {
  const port = await freePort();
  // The default webhook policy (SVC_WEBHOOK_ALLOW_PRIVATE unset = sandbox): a loopback receiver works for test keys.
  const config = loadConfig({ PORT: String(port), LOG_LEVEL: 'silent', SVC_SANDBOX_BLOCK_MS: '20' });
  const metrics = createMetricsRegistry({ defaultMetrics: false });
  simulated = startSandboxEngine({ store: db.store, logger, metrics, config, blockMs: 20, intervalMs: 200 });
  const { sandbox } = simulated;
  delivery = createDelivery({ store: db.store, logger, metrics, config, box, pollIntervalMs: 50 });
  await delivery.start();
  app = createHttp({ store: db.store, logger, metrics, config, box, sandbox, rateLimits: GENEROUS_LIMITS });
  await app.listen({ port, host: '127.0.0.1' });
  url = config.publicUrl;
  browser = await launchChromium();
});
afterAll(async () => {
  await simulated?.close();
  await delivery?.stop();
  await browser?.close();
  await app?.close();
});

describe('sandbox quick start', () => {
  test('test key -> session -> "Simulate payment" on the checkout page -> page confirms -> verified payment.confirmed webhook', async () => {
    const { merchant } = await createMerchant(db.store, box, { name: 'Quickstart Coffee' });
    const { secret: key } = await createApiKey(db.store, { merchantId: merchant.id, livemode: false });

    // svc webhooks listen, in process, as a developer would run it in a second terminal.
    const lines: Record<string, unknown>[] = [];
    let stopListening!: (reason: string) => void;
    const listening = main(['webhooks', 'listen', '--key', key, '--port', '0', '--api', url, '--json'], {
      env: {},
      out: (text) =>
        lines.push(
          ...text
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line)),
        ),
      err: (text) => lines.push({ error: text }),
      stopSignal: new Promise((resolve) => (stopListening = resolve)),
    });
    await expect.poll(() => lines.some((line) => 'listening' in line), { timeout: 10_000 }).toBe(true);

    const created = await fetch(`${url}/api/v1/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '4.20', currency: 'USDC', chain: 'base' }),
    });
    expect(created.status).toBe(201);
    const session = (await created.json()) as { id: string; checkoutUrl: string; paymentAddress: string; livemode: boolean };
    expect(session.livemode).toBe(false);
    expect(session.paymentAddress).toMatch(/^0x5[aA]4[dD][bB]0[cC]5/);

    const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await page.goto(session.checkoutUrl);
    await waitText(page.locator('#status'), 'Waiting for your payment.');
    await saveScreenshot(page, 'sandbox-panel-phone');
    await page.locator('#sandbox-outcome').selectOption('exact');
    await page.locator('#sandbox-pay').click();
    await page.waitForURL(session.checkoutUrl);
    await waitText(page.locator('#status'), /confirmed/i, 20_000);

    await expect
      .poll(() => lines.filter((line) => line.verified === true).map((line) => (line.event as { event: string }).event), { timeout: 20_000 })
      .toEqual(expect.arrayContaining(['payment.confirming', 'payment.confirmed']));
    expect(lines.filter((line) => line.verified === false)).toEqual([]);
    const confirmed = lines.find((line) => (line.event as { event?: string } | undefined)?.event === 'payment.confirmed')!.event as {
      id: string;
      livemode: boolean;
      data: { id: string; status: string };
    };
    expect(confirmed).toMatchObject({ livemode: false, data: { id: session.id, status: 'confirmed' } });

    stopListening('done');
    expect(await listening).toBe(0);
    // The listener removed its temporary endpoint.
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_endpoints WHERE merchant_id = $1 AND deleted_at IS NULL', [
      merchant.id,
    ]);
    expect(rows[0]!.n).toBe(0);
  });
});

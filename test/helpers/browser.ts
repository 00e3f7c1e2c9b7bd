import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { PNG } from 'pngjs';
import jsQR from 'jsqr';
import type { FastifyInstance } from 'fastify';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import type { Store } from '../../src/store/index.ts';
import { box, GENEROUS_LIMITS } from './api.ts';
import { freePort } from './anvil.ts';

/** jsqr's CommonJS default export, typed as called. */
type JsQr = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;

/** Where the test run saves its screenshots (git-ignored). */
export const SCREENSHOT_DIR = path.resolve('test-results/checkout');

/** Phone and desktop viewports the screenshots are taken at. */
export const VIEWPORTS = {
  phone: { width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
  desktop: { width: 1280, height: 900, deviceScaleFactor: 1, isMobile: false, hasTouch: false },
} as const;

/** Debian's Chromium, with the flags NOTES.md lists for these machines. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/** The real API (with the checkout) listening on a real socket, its public URL its own address; `env` adds settings (RPC URLs). */
export async function startCheckoutServer(store: Store, env: Record<string, string> = {}): Promise<{ app: FastifyInstance; url: string }> {
  const port = await freePort();
  const config = loadConfig({ PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env });
  const app = createHttp({
    store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config,
    box,
    rateLimits: GENEROUS_LIMITS,
  });
  await app.listen({ port, host: '127.0.0.1' });
  return { app, url: config.publicUrl };
}

/** A stand-in for the merchant's success page: a real HTTP server that records visits. */
export async function startMerchantSite(): Promise<{ url: string; visits: string[]; close(): Promise<void> }> {
  const visits: string[] = [];
  const server = http.createServer((request, response) => {
    visits.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end('<!doctype html><title>Thanks</title><h1>Thank you for your order</h1>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    visits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Decodes the QR code shown in the page's `#qr` image from a real screenshot of it. */
export async function decodeQr(page: Page): Promise<string | undefined> {
  const qr = page.locator('#qr');
  await qr.waitFor({ state: 'visible' });
  await page.waitForFunction("(() => { const image = document.getElementById('qr'); return !!image && image.complete && image.naturalWidth > 0; })()");
  const png = PNG.sync.read(await qr.screenshot());
  return (jsQR as unknown as JsQr)(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.length), png.width, png.height)?.data;
}

/** Saves a full-page screenshot as test-results/checkout/<name>.png. */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Fails the test on any script error or CSP violation the page reports. */
export function collectPageProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** Waits until `locator`'s text is `expected` (or matches it); fails with the last text seen. */
export async function waitText(locator: Locator, expected: string | RegExp, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | null = null;
  for (;;) {
    last = await locator.textContent({ timeout: timeoutMs }).catch(() => null);
    const text = last?.trim() ?? '';
    if (typeof expected === 'string' ? text === expected : expected.test(text)) return;
    if (Date.now() > deadline) throw new Error(`expected ${locator} to have text ${String(expected)}, last saw ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until the text of `locator` contains `part`. */
export function waitTextContains(locator: Locator, part: string, timeoutMs = 10_000): Promise<void> {
  return waitText(locator, new RegExp(part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), timeoutMs);
}

/**
 * axe-core's `scrollable-region-focusable` rule, run in the page (axe-core is not installed here;
 * docs/testing.md): every element that scrolls (overflow auto or scroll, content larger than its
 * box) must be reachable by keyboard, itself focusable or holding something focusable, or a
 * keyboard user cannot scroll it. @returns a description of each offender.
 */
export function unfocusableScrollRegions(page: Page): Promise<string[]> {
  // A string: the test files are compiled without the DOM library.
  return page.evaluate(`(() => {
    const focusable = 'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';
    const offenders = [];
    for (const element of document.querySelectorAll('body *')) {
      const style = getComputedStyle(element);
      const scrollsX = /(auto|scroll)/.test(style.overflowX) && element.scrollWidth > element.clientWidth;
      const scrollsY = /(auto|scroll)/.test(style.overflowY) && element.scrollHeight > element.clientHeight;
      if (!scrollsX && !scrollsY) continue;
      if (element.tabIndex >= 0 || element.querySelector(focusable)) continue;
      offenders.push(element.tagName.toLowerCase() + '.' + element.className + ' (' + element.scrollWidth + 'x' + element.scrollHeight + ' in ' + element.clientWidth + 'x' + element.clientHeight + ')');
    }
    return offenders;
  })()`) as Promise<string[]>;
}

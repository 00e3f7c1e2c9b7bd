import { beforeAll, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { createMerchant } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box } from '../helpers/api.ts';
import { collectPageProblems, unfocusableScrollRegions } from '../helpers/browser.ts';
import { runSvc, saveDashboardScreenshots, TEST_PASSWORD, useDashboardBrowser } from '../helpers/dashboard.ts';

const db = useTestDatabase('dashboard_browser');
const chromium = useDashboardBrowser(db);
let browser: Browser;
let server: { app: FastifyInstance; url: string };
beforeAll(() => {
  ({ browser, server } = chromium.started());
});

async function apiGet(path: string, key: string): Promise<number> {
  const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return response.status;
}

test('the owner invited with `svc users create` sets a password, creates a test key that works against the API, revokes it, and creates a live key after re-entering the password', async () => {
  const { merchant } = await createMerchant(db.store, box, { name: 'Acme <Tools> & Co' });
  const cli = await runSvc(db.connectionString, ['users', 'create', '--merchant', merchant.id, '--email', 'ada@example.test', '--role', 'owner', '--json'], {
    SVC_PUBLIC_URL: server.url,
  });
  expect(cli.code, cli.err).toBe(0);
  const { signInUrl } = cli.json();
  expect(signInUrl).toMatch(new RegExp(`^${server.url}/dashboard/link/[0-9A-Za-z]{43}$`));

  const context = await browser.newContext();
  const page: Page = await context.newPage();
  const problems = collectPageProblems(page);
  page.setDefaultTimeout(8000);

  // The link: set a password, land on the dashboard signed in.
  await page.goto(signInUrl);
  await saveDashboardScreenshots(page, 'set-password');
  await page.getByLabel('New password').fill(TEST_PASSWORD);
  await page.getByLabel('Repeat the password').fill(TEST_PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL(`${server.url}/dashboard`);
  // The merchant's name is text, never markup.
  await expect(page.locator('.brand .merchant').textContent()).resolves.toBe('Acme <Tools> & Co');
  await saveDashboardScreenshots(page, 'home-first-sign-in');
  // Keyboard: the first Tab reaches the skip link, which moves focus to the page's content.
  await page.keyboard.press('Tab');
  await expect(page.evaluate('document.activeElement.textContent')).resolves.toBe('Skip to content');
  await page.keyboard.press('Enter');
  await expect(page.evaluate('document.activeElement.id')).resolves.toBe('main');

  // Developers, test mode: create a key with both scopes.
  await page.getByRole('link', { name: 'Developers' }).click();
  await page.getByLabel('Description').fill('checkout backend');
  await page.getByRole('button', { name: 'Create test key' }).click();
  const secret = (await page.locator('#new-key-secret').textContent())!.trim();
  expect(secret).toMatch(/^svc_test_[0-9A-Za-z]{32}$/);
  await saveDashboardScreenshots(page, 'developers-key-created');
  expect(await apiGet('/api/v1/payments', secret)).toBe(200);

  // Revoke it (the confirm dialog accepted): the API refuses it at once.
  page.once('dialog', (dialog) => dialog.accept());
  await page.getByRole('button', { name: /^Revoke/ }).click();
  await expect(page.locator('.notice').textContent()).resolves.toContain('Revoked svc_test_');
  expect(await apiGet('/api/v1/payments', secret)).toBe(401);

  // Live mode: the password was entered at sign-up; pretend that was 11 minutes ago.
  await page.getByRole('button', { name: 'Switch to live data' }).click();
  await page.getByRole('button', { name: 'Create live key' }).waitFor();
  await db.store.query(`UPDATE dashboard_sessions SET reauth_at = now() - interval '11 minutes'`);
  await page.getByRole('button', { name: 'Create live key' }).click();
  await page.getByLabel('Password').fill(TEST_PASSWORD);
  await saveDashboardScreenshots(page, 'reauth-prompt');
  await page.getByRole('button', { name: 'Continue' }).click();
  const live = (await page.locator('#new-key-secret').textContent())!.trim();
  expect(live).toMatch(/^svc_live_[0-9A-Za-z]{32}$/);
  expect(await apiGet('/api/v1/payments', live)).toBe(200);
  await saveDashboardScreenshots(page, 'developers-live');
  // At phone width nothing but the scrolling nav and table is wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);

  // Team: invite a viewer; the link is shown to copy. The audit log lists what happened.
  await page.getByRole('link', { name: 'Team' }).click();
  await page.getByLabel('Email').fill('viewer@example.test');
  await page.getByLabel('Role', { exact: true }).selectOption('viewer');
  await page.getByRole('button', { name: 'Create sign-in link' }).click();
  await expect(page.locator('#sign-in-link').textContent()).resolves.toMatch(new RegExp(`^${server.url}/dashboard/link/[0-9A-Za-z]{43}$`));
  await saveDashboardScreenshots(page, 'team');
  await page.getByRole('link', { name: 'Audit log' }).click();
  await expect(page.locator('tbody tr').first().textContent()).resolves.toContain('user.invited');
  await saveDashboardScreenshots(page, 'audit');
  // At phone width the audit log is cards of labelled lines: nothing scrolls sideways, and any
  // scrolling wrapper left is a focusable, named region (axe's scrollable-region-focusable).
  expect(await page.evaluate('document.querySelector(".table-wrap").scrollWidth > document.querySelector(".table-wrap").clientWidth')).toBe(false);
  expect(await unfocusableScrollRegions(page)).toEqual([]);
  await page.getByRole('link', { name: 'Home' }).click();
  expect(await unfocusableScrollRegions(page)).toEqual([]);

  // Sign out: the dashboard asks to sign in again.
  await page.locator('.user-menu summary').click();
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.waitForURL(/\/dashboard\/sign-in/);
  await saveDashboardScreenshots(page, 'sign-in');
  await page.goto(`${server.url}/dashboard/developers`);
  await page.waitForURL(/\/dashboard\/sign-in\?next=/);

  // The one non-2xx document is the password prompt (401), which Chromium logs as a failed load.
  expect(problems.filter((problem) => !problem.includes('status of 401'))).toEqual([]);
  await context.close();
}, 90_000);

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { createMerchant, inviteDashboardUser, OPERATOR, useSignInLink, type DashboardUser, type Role } from '../../src/accounts/index.ts';
import type { Store } from '../../src/store/index.ts';
import { main } from '../../src/cli/main.ts';
import { box, newMerchant } from './api.ts';
import { launchChromium, startCheckoutServer, VIEWPORTS } from './browser.ts';

/** Where the dashboard tests save screenshots (git-ignored, like test-results/checkout). */
export const DASHBOARD_SCREENSHOT_DIR = path.resolve('test-results/dashboard');

/** The password the helpers give users: long enough for the 12-character rule. */
export const TEST_PASSWORD = 'correct horse battery staple';

/** The real API with the dashboard, on a real socket; its public URL is its own http address; `env` adds settings (RPC URLs). */
export const startDashboardServer = (store: Store, env: Record<string, string> = {}): Promise<{ app: FastifyInstance; url: string }> =>
  startCheckoutServer(store, env);

/** A merchant with a dashboard user invited as the CLI does it (`inviteDashboardUser`), link not yet used. */
export async function newMerchantWithInvite(store: Store, params: { email?: string; role?: Role; name?: string } = {}) {
  const { merchant } = await createMerchant(store, box, { name: params.name ?? 'Dashboard Shop' });
  const email = params.email ?? `owner-${merchant.id.slice(-6).toLowerCase()}@example.test`;
  const { user, link } = await inviteDashboardUser(store, { merchantId: merchant.id, email, role: params.role ?? 'owner', actor: OPERATOR });
  return { merchantId: merchant.id, user, token: link.token, linkPath: `/dashboard/link/${link.token}` };
}

/** A user of `merchantId` with `TEST_PASSWORD` set (invited, then the link used), through the domain functions. */
export async function addUserWithPassword(store: Store, params: { merchantId: string; role: Role; email?: string }): Promise<DashboardUser> {
  const email = params.email ?? `${params.role}-${Math.random().toString(36).slice(2, 10)}@example.test`;
  const { link } = await inviteDashboardUser(store, { merchantId: params.merchantId, email, role: params.role, actor: OPERATOR });
  return useSignInLink(store, { token: link.token, password: TEST_PASSWORD, confirmation: TEST_PASSWORD });
}

/** A merchant and a signed-up owner (password set). */
export async function newMerchantWithOwner(store: Store, params: { name?: string } = {}) {
  const { merchant } = await createMerchant(store, box, { name: params.name ?? 'Dashboard Shop' });
  const owner = await addUserWithPassword(store, { merchantId: merchant.id, role: 'owner' });
  return { merchantId: merchant.id, owner };
}

/** The value of the first `name="_csrf"` field in a page. */
export function csrfOf(htmlText: string): string {
  const match = /name="_csrf" value="([^"]+)"/.exec(htmlText);
  if (!match) throw new Error('no _csrf field in the page');
  return match[1]!;
}

export interface DashboardResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

/**
 * A cookie-keeping HTTP client of the dashboard, driving `app` in process (inject): for the
 * fast, non-browser tests (forged posts, throttling, expiry). `post` sends a urlencoded form
 * with the session's CSRF token unless `csrf` says otherwise.
 */
export function dashboardClient(app: FastifyInstance) {
  const jar = new Map<string, string>();
  let csrf: string | undefined;
  const cookieHeader = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const remember = (setCookie: string | string[] | number | undefined) => {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [String(setCookie)] : []) {
      const [pair] = line.split(';');
      const [name, value] = [pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1)];
      if (/Max-Age=0/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
  };
  async function request(
    method: 'GET' | 'POST',
    url: string,
    params: { form?: Record<string, string>; headers?: Record<string, string> } = {},
  ): Promise<DashboardResponse> {
    const response = await app.inject({
      method,
      url,
      headers: {
        ...(jar.size ? { cookie: cookieHeader() } : {}),
        ...(params.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...params.headers,
      },
      ...(params.form ? { payload: new URLSearchParams(params.form).toString() } : {}),
    });
    remember(response.headers['set-cookie']);
    const found = /name="_csrf" value="([^"]+)"/.exec(response.body);
    if (found) csrf = found[1];
    return { status: response.statusCode, headers: response.headers, body: response.body };
  }
  return {
    jar,
    get csrfToken() {
      return csrf;
    },
    get: (url: string, headers: Record<string, string> = {}) => request('GET', url, { headers }),
    /** POSTs a form; `csrf: false` leaves the token out, a string sends that one. */
    post: (url: string, form: Record<string, string> = {}, options: { csrf?: string | false; headers?: Record<string, string> } = {}) =>
      request('POST', url, {
        form: options.csrf === false ? form : { _csrf: options.csrf ?? csrf ?? '', ...form },
        headers: options.headers ?? {},
      }),
    /** Signs in with email and password (GET the form for its token first, as a browser does); the answer of the POST. */
    async signIn(email: string, password = TEST_PASSWORD, extra: Record<string, string> = {}): Promise<DashboardResponse> {
      await request('GET', '/dashboard/sign-in');
      return request('POST', '/dashboard/sign-in', { form: { _csrf: csrf ?? '', email, password, ...extra } });
    },
  };
}
export type DashboardClient = ReturnType<typeof dashboardClient>;

/** A signed-in client of `app` for `email` (the session's CSRF token read from the home page). */
export async function signedInClient(app: FastifyInstance, email: string): Promise<DashboardClient> {
  const client = dashboardClient(app);
  const answer = await client.signIn(email);
  if (answer.status !== 303) throw new Error(`sign-in failed with ${answer.status}: ${answer.body.slice(0, 300)}`);
  await client.get('/dashboard');
  return client;
}

/** Signs `page` in through the real form. */
export async function signInInBrowser(page: Page, baseUrl: string, email: string, password = TEST_PASSWORD): Promise<void> {
  await page.goto(`${baseUrl}/dashboard/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((url) => !url.pathname.startsWith('/dashboard/sign-in'));
}

/** Saves full-page screenshots of `page` at the phone (390 px) and desktop (1280 px) widths, as test-results/dashboard/<name>-<width>.png. */
export async function saveDashboardScreenshots(page: Page, name: string): Promise<string[]> {
  fs.mkdirSync(DASHBOARD_SCREENSHOT_DIR, { recursive: true });
  const files: string[] = [];
  for (const viewport of [VIEWPORTS.phone, VIEWPORTS.desktop]) {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    const file = path.join(DASHBOARD_SCREENSHOT_DIR, `${name}-${viewport.width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
  }
  return files;
}

/** Runs the real `svc …` command line in process against `databaseUrl`; exit code and output. */
export async function runSvc(databaseUrl: string, argv: string[], env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-dash-cli-'));
  const code = await main(argv, {
    env: { DATABASE_URL: databaseUrl, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...env },
    out: (text) => (out += text),
    err: (text) => (err += text),
  });
  return { code, out, err, json: () => JSON.parse(out) };
}

/** The inline error of a dashboard page (the `errorBox` text), HTML entities decoded; undefined when it shows none. */
export function formError(body: string): string | undefined {
  return /<p class="form-error" role="alert">([^<]*)<\/p>/
    .exec(body)?.[1]
    ?.replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&#96;/g, '`')
    .replace(/&amp;/g, '&');
}

/** A merchant with API keys (`m`) and an owner, a developer and a viewer signed in to the dashboard served by `app`. */
export async function shopWithRoles(store: Store, app: FastifyInstance) {
  const m = await newMerchant(store);
  const [owner, developer, viewer] = await Promise.all(
    (['owner', 'developer', 'viewer'] as const).map((role) => addUserWithPassword(store, { merchantId: m.id, role })),
  );
  return {
    m,
    owner: await signedInClient(app, owner!.email),
    developer: await signedInClient(app, developer!.email),
    viewer: await signedInClient(app, viewer!.email),
  };
}

/**
 * Chromium and the dashboard server for one browser file, started in `beforeAll` and closed in
 * `afterAll`; `started()` gives them (call it in a later `beforeAll` or in a test).
 */
export function useDashboardBrowser(db: { store: Store }) {
  let browser: Browser;
  let server: { app: FastifyInstance; url: string };
  beforeAll(async () => {
    server = await startDashboardServer(db.store);
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.app.close();
  });
  return { started: () => ({ browser, server }) };
}

import { describe, expect, test } from 'vitest';
import { listApiKeys } from '../../src/accounts/index.ts';
import { DASHBOARD_CSP } from '../../src/dashboard/security.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, useApi } from '../helpers/api.ts';
import {
  addUserWithPassword,
  csrfOf,
  dashboardClient,
  newMerchantWithInvite,
  newMerchantWithOwner,
  signedInClient,
  TEST_PASSWORD,
} from '../helpers/dashboard.ts';

/**
 * What a page of another site can do with a signed-in dashboard: CSRF and login CSRF refused; the
 * pages' strict CSP and escaping, the session cookie's flags, the assets' caching.
 */
const db = useTestDatabase('dashboard_cross_site');
const api = useApi(db, { checked: false });

const keysOf = (merchantId: string) => listApiKeys(db.store, { merchantId });

describe('cross-site requests', () => {
  test('missing or wrong CSRF token, a foreign Origin, Origin null or Sec-Fetch-Site cross-site: 403 and nothing changes', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(api.app, owner.email);
    const form = { description: 'csrf', scope_read: '1' };
    const refusals = [
      await client.post('/dashboard/developers/keys', form, { csrf: false }),
      await client.post('/dashboard/developers/keys', form, { csrf: 'A'.repeat(43) }),
      await client.post('/dashboard/developers/keys', form, { headers: { origin: 'https://evil.example' } }),
      await client.post('/dashboard/developers/keys', form, { headers: { origin: 'null' } }),
      await client.post('/dashboard/developers/keys', form, { headers: { 'sec-fetch-site': 'cross-site' } }),
    ];
    expect(refusals.map((answer) => answer.status)).toEqual([403, 403, 403, 403, 403]);
    expect(await keysOf(merchantId)).toEqual([]);
    // htmx sends the token as a header (from <body hx-headers>) instead of a field.
    const viaHeader = await client.post(
      '/dashboard/mode',
      { livemode: 'false' },
      { csrf: false, headers: { 'x-csrf-token': client.csrfToken!, 'hx-request': 'true' } },
    );
    expect(viaHeader.status).toBe(204);
    expect(viaHeader.headers['hx-redirect']).toBe('/dashboard');
    // The same form from our own page passes.
    expect(
      (await client.post('/dashboard/developers/keys', form, { headers: { origin: 'https://pay.example.test', 'sec-fetch-site': 'same-origin' } })).status,
    ).toBe(201);
  });

  test('a sign-in form posted from another site (login CSRF) or without the pre-session cookie is refused', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = dashboardClient(api.app);
    const foreign = await client.signIn(owner.email, TEST_PASSWORD, {});
    expect(foreign.status).toBe(303);
    const attacker = dashboardClient(api.app);
    const page = await attacker.get('/dashboard/sign-in');
    const token = csrfOf(page.body);
    attacker.jar.clear();
    const noCookie = await attacker.post('/dashboard/sign-in', { email: owner.email, password: TEST_PASSWORD }, { csrf: token });
    expect(noCookie.status).toBe(403);
    const other = dashboardClient(api.app);
    await other.get('/dashboard/sign-in');
    const crossSite = await other.post('/dashboard/sign-in', { email: owner.email, password: TEST_PASSWORD }, { headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers['set-cookie']).toBeUndefined();
  });
});

describe('pages', () => {
  test('every page has the strict CSP, no inline script, style or handler, and escapes what it shows', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store, { name: '<script>alert(1)</script> Shop' });
    await addUserWithPassword(db.store, { merchantId, role: 'viewer', email: `"><img/src=x/onerror=alert(1)>@example.test` });
    const client = await signedInClient(api.app, owner.email);
    const invite = await newMerchantWithInvite(db.store);
    const paths = ['/dashboard', '/dashboard/payments', '/dashboard/unmatched', '/dashboard/links', '/dashboard/refunds', '/dashboard/webhooks'];
    paths.push('/dashboard/developers', '/dashboard/settings', '/dashboard/team', '/dashboard/audit', '/dashboard/account', '/dashboard/nope');
    for (const path of [...paths, '/dashboard/sign-in', invite.linkPath]) {
      const answer = await (path.startsWith('/dashboard/link/') || path === '/dashboard/sign-in' ? dashboardClient(api.app) : client).get(path);
      expect(answer.status, path).toBe(path === '/dashboard/nope' ? 404 : 200);
      expect(answer.headers['content-security-policy'], path).toBe(DASHBOARD_CSP);
      expect(answer.headers['x-frame-options'], path).toBe('DENY');
      expect(answer.headers['cache-control'], path).toBe('no-store');
      expect(answer.body, path).not.toMatch(/<script(?![^>]*\bsrc="\/dashboard\/assets\/)[^>]*>/i);
      expect(answer.body, path).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
      expect(answer.body, path).not.toContain('<script>alert');
      expect(answer.body, path).not.toContain('<img/src');
    }
    expect((await client.get('/dashboard/team')).body).toContain('&quot;&gt;&lt;img/src=x/onerror=alert(1)&gt;@example.test');
  });

  test('over plain http the cookie has no __Host- prefix and no Secure flag (still HttpOnly, SameSite=Lax)', async () => {
    const plain = buildApi(db.store, { env: { SVC_PUBLIC_URL: 'http://127.0.0.1:8080' } });
    try {
      const { owner } = await newMerchantWithOwner(db.store);
      const answer = await dashboardClient(plain).signIn(owner.email);
      expect(answer.status).toBe(303);
      const cookies = ([] as string[]).concat(answer.headers['set-cookie'] as string[]);
      expect(cookies.find((cookie) => cookie.startsWith('svc_dash='))).toMatch(/^svc_dash=[0-9A-Za-z]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
    } finally {
      await plain.close();
    }
  });

  test('assets are served from the daemon with long caching; unknown names are 404', async () => {
    const htmx = await api.app.inject({ method: 'GET', url: '/dashboard/assets/htmx.min.js' });
    expect(htmx.statusCode).toBe(200);
    expect(htmx.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(htmx.body).toContain('htmx');
    expect((await api.app.inject({ method: 'GET', url: '/dashboard/assets/uplot.min.js' })).statusCode).toBe(200);
    expect((await api.app.inject({ method: 'GET', url: '/dashboard/assets/..%2F..%2Fpackage.json' })).statusCode).toBe(404);
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { addUserWithPassword, dashboardClient, newMerchantWithInvite, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';

const db = useTestDatabase('dashboard_foundation');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

describe('dashboard foundation', () => {
  test('an invited owner sets a password from the link, lands signed in, and the page is strict', async () => {
    const { linkPath, user } = await newMerchantWithInvite(db.store);
    const client = dashboardClient(app);
    const form = await client.get(linkPath);
    expect(form.status).toBe(200);
    expect(form.body).toContain(user.email);
    const done = await client.post(linkPath, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD });
    expect(done.status).toBe(303);
    const cookie = String(done.headers['set-cookie']);
    // PUBLIC_URL is https: the __Host- prefix, Secure, HttpOnly, SameSite.
    expect(cookie).toMatch(/^__Host-svc_dash=[0-9A-Za-z]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
    const home = await client.get('/dashboard');
    expect(home.status).toBe(200);
    expect(home.headers['content-security-policy']).toContain("script-src 'self'");
    expect(home.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(home.headers['x-frame-options']).toBe('DENY');
    expect(home.headers['cache-control']).toBe('no-store');
    expect(home.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(home.body).not.toMatch(/\sstyle=|\son[a-z]+=/i);
    // The link was single use.
    expect((await dashboardClient(app).get(linkPath)).status).toBe(410);
  });

  test('a cross-site post and a post without the session token are refused; the same post with it works', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const foreign = await client.post('/dashboard/mode', { livemode: 'true' }, { headers: { origin: 'https://evil.example' } });
    expect(foreign.status).toBe(403);
    const noToken = await client.post('/dashboard/mode', { livemode: 'true' }, { csrf: false });
    expect(noToken.status).toBe(403);
    const ok = await client.post('/dashboard/mode', { livemode: 'true', next: '/dashboard/payments' }, { headers: { origin: 'https://pay.example.test' } });
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toBe('/dashboard/payments');
    expect((await client.get('/dashboard')).body).toContain('Live data');
  });

  test('a viewer does not see the owners-only sections and is refused them', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    const client = await signedInClient(app, viewer.email);
    const home = await client.get('/dashboard');
    expect(home.body).not.toContain('Audit log');
    expect((await client.get('/dashboard/team')).status).toBe(403);
  });
});

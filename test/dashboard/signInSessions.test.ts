import { describe, expect, test } from 'vitest';
import { takeSignInAttempt, IP_ATTEMPTS } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, GENEROUS_LIMITS, PUBLIC_URL, useApi } from '../helpers/api.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { PassThrough } from 'node:stream';
import { addUserWithPassword, dashboardClient, newMerchantWithInvite, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';

/**
 * Sign-in throttling (per account and per IP), session lifetimes and sign-out everywhere,
 * expired or used sign-in links, and no link token in the logs.
 */
const db = useTestDatabase('dashboard_sign_in_sessions');
const api = useApi(db, { checked: false });

const setSession = (userId: string, assignment: string) => db.store.query(`UPDATE dashboard_sessions SET ${assignment} WHERE user_id = $1`, [userId]);

describe('sign-in throttling, sessions and links', () => {
  test('wrong passwords are throttled per account: the 6th attempt in 15 minutes is a 429, even with the right password', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = dashboardClient(api.app);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 5; attempt++) statuses.push((await client.signIn(owner.email, 'wrong password here')).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401]);
    const locked = await client.signIn(owner.email);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(800);
    expect(locked.body).toContain('too many sign-in attempts');
    expect(String(locked.headers['set-cookie'] ?? '')).not.toMatch(/svc_dash=/);
    // The window ending (moved back here) lets the right password in again.
    await db.store.query(`UPDATE dashboard_sign_in_failures SET window_started_at = now() - interval '16 minutes' WHERE bucket = $1`, [`user:${owner.id}`]);
    expect((await client.signIn(owner.email)).status).toBe(303);
  });

  test('attempts are counted per IP across accounts, in Postgres', async () => {
    const ip = '203.0.113.77';
    for (let attempt = 0; attempt < IP_ATTEMPTS; attempt++) await takeSignInAttempt(db.store, { email: `nobody${attempt}@example.test`, ip, userIds: [] });
    await expect(takeSignInAttempt(db.store, { email: 'someone-else@example.test', ip, userIds: [] })).rejects.toThrow('too many sign-in attempts');
  });

  test('a session ends after 2 hours idle, after 12 hours in all, and for a disabled user', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(api.app, owner.email);
    expect((await client.get('/dashboard/developers')).status).toBe(200);
    await setSession(owner.id, `last_seen_at = now() - interval '2 hours 1 minute'`);
    const idle = await client.get('/dashboard/developers');
    expect(idle.status).toBe(303);
    expect(idle.headers.location).toBe('/dashboard/sign-in?next=%2Fdashboard%2Fdevelopers');

    const again = await signedInClient(api.app, owner.email);
    await setSession(owner.id, `expires_at = now() - interval '1 second'`);
    expect((await again.get('/dashboard/developers')).status).toBe(303);

    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    const viewerClient = await signedInClient(api.app, viewer.email);
    const ownerClient = await signedInClient(api.app, owner.email);
    expect((await ownerClient.post(`/dashboard/team/${viewer.id}/disable`)).status).toBe(303);
    expect((await viewerClient.get('/dashboard/developers')).status).toBe(303);
    expect((await dashboardClient(api.app).signIn(viewer.email)).status).toBe(401);
  });

  test('sign out everywhere ends every session of the user', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const first = await signedInClient(api.app, owner.email);
    const second = await signedInClient(api.app, owner.email);
    const out = await first.post('/dashboard/sign-out-everywhere');
    expect(out.status).toBe(303);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expect((await second.get('/dashboard')).status).toBe(303);
  });

  test('an expired or used sign-in link is refused (410) and sets no password', async () => {
    const expired = await newMerchantWithInvite(db.store);
    await db.store.query(`UPDATE dashboard_sign_in_links SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [expired.user.id]);
    const client = dashboardClient(api.app);
    expect((await client.get(expired.linkPath)).status).toBe(410);
    await client.get('/dashboard/sign-in');
    expect((await client.post(expired.linkPath, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(410);
    const { rows } = await db.store.query('SELECT password_hash FROM dashboard_users WHERE id = $1', [expired.user.id]);
    expect(rows[0]!.password_hash).toBeNull();

    const used = await newMerchantWithInvite(db.store);
    const first = dashboardClient(api.app);
    await first.get(used.linkPath);
    const short = await first.post(used.linkPath, { password: 'short', confirmation: 'short' });
    expect(short.status).toBe(400);
    expect(short.body).toContain('the password must have at least 12 characters');
    expect((await first.post(used.linkPath, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(303);
    const second = dashboardClient(api.app);
    await second.get('/dashboard/sign-in');
    expect((await second.post(used.linkPath, { password: 'another long password', confirmation: 'another long password' })).status).toBe(410);
  });
});

describe('secrets stay out of the logs', () => {
  test('an unhandled error on a sign-in link page logs the path without the link token', async () => {
    const lines: string[] = [];
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
    const logged = createHttp({
      store: db.store,
      logger: createLogger({ level: 'info', destination }),
      metrics: createMetricsRegistry({ defaultMetrics: false }),
      config: loadConfig({ SVC_PUBLIC_URL: PUBLIC_URL, LOG_LEVEL: 'info' }),
      box,
      rateLimits: GENEROUS_LIMITS,
    });
    await logged.ready();
    const invited = await newMerchantWithInvite(db.store);
    // The links table is briefly unreachable: the link page fails with a 500 that is logged.
    await db.store.query('ALTER TABLE dashboard_sign_in_links RENAME TO dashboard_sign_in_links_away');
    try {
      const failed = await logged.inject({ method: 'GET', url: invited.linkPath });
      expect(failed.statusCode).toBe(500);
    } finally {
      await db.store.query('ALTER TABLE dashboard_sign_in_links_away RENAME TO dashboard_sign_in_links');
      await logged.close();
    }
    const errors = lines.filter((line) => line.includes('Unhandled error in dashboard request'));
    expect(errors.length).toBe(1);
    expect(errors[0]).toContain('/dashboard/link/[redacted]');
    expect(lines.join('\n')).not.toContain(invited.token);
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { generate } from 'otplib';
import { createApiKey, listApiKeys, reissueSignInLink, takeSignInAttempt, IP_ATTEMPTS, OPERATOR } from '../../src/accounts/index.ts';
import { DASHBOARD_CSP } from '../../src/dashboard/security.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box, buildApi, GENEROUS_LIMITS, PUBLIC_URL } from '../helpers/api.ts';
import { createHttp } from '../../src/http.ts';
import { loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { PassThrough } from 'node:stream';
import {
  addUserWithPassword,
  csrfOf,
  dashboardClient,
  newMerchantWithInvite,
  newMerchantWithOwner,
  signedInClient,
  TEST_PASSWORD,
  type DashboardClient,
} from '../helpers/dashboard.ts';

const db = useTestDatabase('dashboard_security');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

const keysOf = (merchantId: string) => listApiKeys(db.store, { merchantId });
const setSession = (userId: string, assignment: string) => db.store.query(`UPDATE dashboard_sessions SET ${assignment} WHERE user_id = $1`, [userId]);

async function toLive(client: DashboardClient): Promise<void> {
  expect((await client.post('/dashboard/mode', { livemode: 'true' })).status).toBe(303);
}

describe('roles are enforced on the server', () => {
  test('a viewer cannot create a key even with a forged post carrying its valid CSRF token: 403, nothing created', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    const client = await signedInClient(app, viewer.email);
    const page = await client.get('/dashboard/developers');
    expect(page.body).not.toContain('Create test key');
    const forged = await client.post('/dashboard/developers/keys', { description: 'forged', scope_read: '1', scope_write: '1' });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('your role (viewer) may not do this (keys.test)');
    expect(await keysOf(merchantId)).toEqual([]);
  });

  test('a developer creates test keys but neither creates nor revokes live keys', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    const live = await createApiKey(db.store, { merchantId, livemode: true });
    const client = await signedInClient(app, developer.email);
    expect((await client.post('/dashboard/developers/keys', { scope_read: '1' })).status).toBe(201);
    await toLive(client);
    expect((await client.post('/dashboard/developers/keys', { scope_read: '1' })).status).toBe(403);
    expect((await client.post(`/dashboard/developers/keys/${live.apiKey.id}/revoke`)).status).toBe(403);
    const keys = await keysOf(merchantId);
    expect(keys.map((key) => [key.livemode, key.scopes, key.revokedAt])).toEqual([
      [true, ['read', 'write'], null],
      [false, ['read'], null],
    ]);
  });

  test('another merchant’s key id answers 404 and stays active; a viewer or developer cannot open Team or the audit log', async () => {
    const other = await newMerchantWithOwner(db.store);
    const foreignKey = await createApiKey(db.store, { merchantId: other.merchantId, livemode: false });
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const answer = await client.post(`/dashboard/developers/keys/${foreignKey.apiKey.id}/revoke`);
    expect(answer.status).toBe(404);
    expect(answer.body).toContain(`no API key ${foreignKey.apiKey.id}`);
    expect((await keysOf(other.merchantId))[0]!.revokedAt).toBeNull();
    // Nor can it touch the other merchant's users.
    for (const action of ['disable', 'link', 'role']) {
      expect((await client.post(`/dashboard/team/${other.owner.id}/${action}`, { role: 'viewer' })).status, action).toBe(404);
    }
    const { rows } = await db.store.query('SELECT role, disabled_at FROM dashboard_users WHERE id = $1', [other.owner.id]);
    expect(rows[0]).toEqual({ role: 'owner', disabled_at: null });
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    const devClient = await signedInClient(app, developer.email);
    expect((await devClient.get('/dashboard/team')).status).toBe(403);
    expect((await devClient.get('/dashboard/audit.csv')).status).toBe(403);
    expect((await devClient.post('/dashboard/team/invite', { email: 'x@example.test', role: 'owner' })).status).toBe(403);
  });
});

describe('cross-site requests', () => {
  test('missing or wrong CSRF token, a foreign Origin, Origin null or Sec-Fetch-Site cross-site: 403 and nothing changes', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
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
    const client = dashboardClient(app);
    const foreign = await client.signIn(owner.email, TEST_PASSWORD, {});
    expect(foreign.status).toBe(303);
    const attacker = dashboardClient(app);
    const page = await attacker.get('/dashboard/sign-in');
    const token = csrfOf(page.body);
    attacker.jar.clear();
    const noCookie = await attacker.post('/dashboard/sign-in', { email: owner.email, password: TEST_PASSWORD }, { csrf: token });
    expect(noCookie.status).toBe(403);
    const other = dashboardClient(app);
    await other.get('/dashboard/sign-in');
    const crossSite = await other.post('/dashboard/sign-in', { email: owner.email, password: TEST_PASSWORD }, { headers: { origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers['set-cookie']).toBeUndefined();
  });
});

describe('sign-in throttling, sessions and links', () => {
  test('wrong passwords are throttled per account: the 6th attempt in 15 minutes is a 429, even with the right password', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = dashboardClient(app);
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
    const client = await signedInClient(app, owner.email);
    expect((await client.get('/dashboard/developers')).status).toBe(200);
    await setSession(owner.id, `last_seen_at = now() - interval '2 hours 1 minute'`);
    const idle = await client.get('/dashboard/developers');
    expect(idle.status).toBe(303);
    expect(idle.headers.location).toBe('/dashboard/sign-in?next=%2Fdashboard%2Fdevelopers');

    const again = await signedInClient(app, owner.email);
    await setSession(owner.id, `expires_at = now() - interval '1 second'`);
    expect((await again.get('/dashboard/developers')).status).toBe(303);

    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    const viewerClient = await signedInClient(app, viewer.email);
    const ownerClient = await signedInClient(app, owner.email);
    expect((await ownerClient.post(`/dashboard/team/${viewer.id}/disable`)).status).toBe(303);
    expect((await viewerClient.get('/dashboard/developers')).status).toBe(303);
    expect((await dashboardClient(app).signIn(viewer.email)).status).toBe(401);
  });

  test('sign out everywhere ends every session of the user', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const first = await signedInClient(app, owner.email);
    const second = await signedInClient(app, owner.email);
    const out = await first.post('/dashboard/sign-out-everywhere');
    expect(out.status).toBe(303);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    expect((await second.get('/dashboard')).status).toBe(303);
  });

  test('an expired or used sign-in link is refused (410) and sets no password', async () => {
    const expired = await newMerchantWithInvite(db.store);
    await db.store.query(`UPDATE dashboard_sign_in_links SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [expired.user.id]);
    const client = dashboardClient(app);
    expect((await client.get(expired.linkPath)).status).toBe(410);
    await client.get('/dashboard/sign-in');
    expect((await client.post(expired.linkPath, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(410);
    const { rows } = await db.store.query('SELECT password_hash FROM dashboard_users WHERE id = $1', [expired.user.id]);
    expect(rows[0]!.password_hash).toBeNull();

    const used = await newMerchantWithInvite(db.store);
    const first = dashboardClient(app);
    await first.get(used.linkPath);
    const short = await first.post(used.linkPath, { password: 'short', confirmation: 'short' });
    expect(short.status).toBe(400);
    expect(short.body).toContain('the password must have at least 12 characters');
    expect((await first.post(used.linkPath, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(303);
    const second = dashboardClient(app);
    await second.get('/dashboard/sign-in');
    expect((await second.post(used.linkPath, { password: 'another long password', confirmation: 'another long password' })).status).toBe(410);
  });
});

describe('a sign-in link does not skip two-factor', () => {
  test('a link for a user with TOTP asks for the code before it sets anything; an owner can reset a lost device, audited', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    const devClient = await signedInClient(app, developer.email);
    const started = await devClient.post('/dashboard/account/two-factor/start');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
    expect((await devClient.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret }) })).status).toBe(303);
    // The confirming code's step is spent; step back so the current code counts once more.
    await db.store.query('UPDATE dashboard_users SET totp_last_step = totp_last_step - 2 WHERE id = $1', [developer.id]);
    const passwordOf = async () => (await db.store.query('SELECT password_hash FROM dashboard_users WHERE id = $1', [developer.id])).rows[0]!.password_hash;
    const before = await passwordOf();

    // Whoever holds a new link (an owner handed it out, or it leaked) still needs the device.
    const link = await reissueSignInLink(db.store, { merchantId, userId: developer.id, actor: OPERATOR });
    const holder = dashboardClient(app);
    const form = await holder.get(`/dashboard/link/${link.token}`);
    expect(form.body).toContain('Two-factor code');
    const newPassword = { password: 'a brand new long password', confirmation: 'a brand new long password' };
    const noCode = await holder.post(`/dashboard/link/${link.token}`, newPassword);
    expect(noCode.status).toBe(401);
    expect(noCode.body).toContain('enter the code from your authenticator app');
    const wrong = await holder.post(`/dashboard/link/${link.token}`, { ...newPassword, code: '000000' });
    expect(wrong.status).toBe(401);
    expect(await passwordOf()).toBe(before);
    const { rows: unused } = await db.store.query('SELECT count(*)::int AS n FROM dashboard_sign_in_links WHERE user_id = $1 AND used_at IS NULL', [
      developer.id,
    ]);
    expect(unused[0]!.n).toBeGreaterThanOrEqual(1);
    // The developer's own session is untouched by the refused attempts.
    expect((await devClient.get('/dashboard')).status).toBe(200);
    const right = await holder.post(`/dashboard/link/${link.token}`, { ...newPassword, code: await generate({ secret }) });
    expect(right.status).toBe(303);
    expect(await passwordOf()).not.toBe(before);

    // A lost device: an owner turns the user's TOTP off (recent password, audited); another merchant's owner cannot.
    const stranger = await newMerchantWithOwner(db.store);
    const strangerClient = await signedInClient(app, stranger.owner.email);
    expect((await strangerClient.post(`/dashboard/team/${developer.id}/two-factor/reset`)).status).toBe(404);
    const ownerClient = await signedInClient(app, owner.email);
    expect((await ownerClient.get('/dashboard/team')).body).toContain(`/dashboard/team/${developer.id}/two-factor/reset`);
    expect((await ownerClient.post(`/dashboard/team/${developer.id}/two-factor/reset`)).status).toBe(303);
    const { rows } = await db.store.query('SELECT totp_enabled_at FROM dashboard_users WHERE id = $1', [developer.id]);
    expect(rows[0]!.totp_enabled_at).toBeNull();
    const { rows: audit } = await db.store.query(`SELECT user_id, details FROM audit_log WHERE target = $1 AND action = 'user.totp_disabled'`, [developer.id]);
    expect(audit).toEqual([{ user_id: owner.id, details: { email: developer.email, resetByOwner: true } }]);
    const next = await reissueSignInLink(db.store, { merchantId, userId: developer.id, actor: OPERATOR });
    const afterReset = dashboardClient(app);
    await afterReset.get(`/dashboard/link/${next.token}`);
    expect((await afterReset.post(`/dashboard/link/${next.token}`, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(303);
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

describe('re-authentication for money-routing actions', () => {
  test('creating a live key without a recent password asks for it, refuses a wrong one, and continues with the right one', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    await toLive(client);
    await setSession(owner.id, `reauth_at = now() - interval '11 minutes'`);
    const asked = await client.post('/dashboard/developers/keys', { description: 'prod', scope_read: '1', scope_write: '1' });
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('data-reauth');
    // The prompt replays the form's fields.
    expect(asked.body).toContain('name="description" value="prod"');
    expect(await keysOf(merchantId)).toEqual([]);
    const wrong = await client.post('/dashboard/developers/keys', { description: 'prod', scope_read: '1', _reauth_password: 'not my password' });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toContain('that is not your password');
    const right = await client.post('/dashboard/developers/keys', { description: 'prod', scope_read: '1', scope_write: '1', _reauth_password: TEST_PASSWORD });
    expect(right.status).toBe(201);
    expect(right.body).toMatch(/svc_live_[0-9A-Za-z]{32}/);
    // Within the next 10 minutes no prompt.
    expect((await client.post('/dashboard/developers/keys', { scope_read: '1' })).status).toBe(201);
  });

  test('under htmx the prompt is the form alone; the page prompt goes through /dashboard/reauth and back', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    await toLive(client);
    await setSession(owner.id, `reauth_at = now() - interval '11 minutes'`);
    const htmx = await client.post('/dashboard/developers/keys', { scope_read: '1' }, { headers: { 'hx-request': 'true' } });
    expect(htmx.status).toBe(401);
    expect(htmx.body).toMatch(/^<form method="post" action="\/dashboard\/developers\/keys" class="stack reauth" data-reauth>/);
    const prompt = await client.post('/dashboard/reauth', { next: '/dashboard/team' });
    expect(prompt.status).toBe(401);
    const back = await client.post('/dashboard/reauth', { next: '/dashboard/team', _reauth_password: TEST_PASSWORD });
    expect(back.status).toBe(303);
    expect(back.headers.location).toBe('/dashboard/team');
  });
});

describe('pages', () => {
  test('every page has the strict CSP, no inline script, style or handler, and escapes what it shows', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store, { name: '<script>alert(1)</script> Shop' });
    await addUserWithPassword(db.store, { merchantId, role: 'viewer', email: `"><img/src=x/onerror=alert(1)>@example.test` });
    const client = await signedInClient(app, owner.email);
    const invite = await newMerchantWithInvite(db.store);
    const paths = ['/dashboard', '/dashboard/payments', '/dashboard/unmatched', '/dashboard/links', '/dashboard/refunds', '/dashboard/webhooks'];
    paths.push('/dashboard/developers', '/dashboard/settings', '/dashboard/team', '/dashboard/audit', '/dashboard/account', '/dashboard/nope');
    for (const path of [...paths, '/dashboard/sign-in', invite.linkPath]) {
      const answer = await (path.startsWith('/dashboard/link/') || path === '/dashboard/sign-in' ? dashboardClient(app) : client).get(path);
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
    const htmx = await app.inject({ method: 'GET', url: '/dashboard/assets/htmx.min.js' });
    expect(htmx.statusCode).toBe(200);
    expect(htmx.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(htmx.body).toContain('htmx');
    expect((await app.inject({ method: 'GET', url: '/dashboard/assets/uplot.min.js' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/dashboard/assets/..%2F..%2Fpackage.json' })).statusCode).toBe(404);
  });
});

describe('two-factor sign-in, team and audit', () => {
  test('a user turns TOTP on; sign-in then needs a code, used once; an owner can require it for everyone', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const started = await client.post('/dashboard/account/two-factor/start');
    expect(started.status).toBe(200);
    expect(started.body).toContain('src="data:image/png;base64,');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
    expect((await client.post('/dashboard/account/two-factor/confirm', { code: '000000' })).status).toBe(400);
    expect((await client.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret }) })).status).toBe(303);

    const signIn = dashboardClient(app);
    const asked = await signIn.signIn(owner.email);
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('Two-factor code');
    // The code used to confirm was spent: the same step is refused.
    expect((await signIn.signIn(owner.email, TEST_PASSWORD, { code: await generate({ secret }) })).status).toBe(401);
    // Wrong codes count against the account; asking again without a code does not reset the count.
    for (let attempt = 0; attempt < 3; attempt++) expect((await signIn.signIn(owner.email, TEST_PASSWORD, { code: '000000' })).status).toBe(401);
    expect((await signIn.signIn(owner.email)).status).toBe(401);
    const { rows: counted } = await db.store.query('SELECT failures FROM dashboard_sign_in_failures WHERE bucket = $1', [`user:${owner.id}`]);
    expect(counted[0]!.failures).toBe(4);
    await db.store.query('UPDATE dashboard_users SET totp_last_step = totp_last_step - 2 WHERE id = $1', [owner.id]);
    expect((await signIn.signIn(owner.email, TEST_PASSWORD, { code: await generate({ secret }) })).status).toBe(303);

    // Require it: a developer without TOTP is sent to set it up and can do nothing else.
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    expect((await client.post('/dashboard/team/two-factor', { required: '1' })).status).toBe(303);
    const devClient = await signedInClient(app, developer.email);
    const home = await devClient.get('/dashboard/developers');
    expect(home.status).toBe(303);
    expect(home.headers.location).toBe('/dashboard/account?setup=two-factor');
    expect((await devClient.post('/dashboard/developers/keys', { scope_read: '1' })).status).toBe(403);
    expect((await devClient.get('/dashboard/account')).body).toContain('requires two-factor sign-in');
  });

  test('an owner invites a developer (link shown to copy), the last owner cannot be demoted, and the audit log records it all as CSV', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const invited = await client.post('/dashboard/team/invite', { email: 'dev@example.test', role: 'developer' });
    expect(invited.status).toBe(201);
    const link = /id="sign-in-link">(https:\/\/pay\.example\.test\/dashboard\/link\/[0-9A-Za-z]{43})</.exec(invited.body)![1]!;
    expect((await dashboardClient(app).get(new URL(link).pathname)).status).toBe(200);
    const duplicate = await client.post('/dashboard/team/invite', { email: 'DEV@example.test', role: 'viewer' });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body).toContain('DEV@example.test is already a dashboard user of this merchant');
    const demote = await client.post(`/dashboard/team/${owner.id}/role`, { role: 'viewer' });
    expect(demote.status).toBe(409);
    expect(demote.body).toContain('the merchant must keep at least one enabled owner');
    await client.post('/dashboard/developers/keys', { description: 'audited', scope_read: '1' });

    const csv = await client.get('/dashboard/audit.csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="audit-mer_[0-9A-Za-z]+\.csv"$/);
    const lines = csv.body.trim().split('\r\n');
    expect(lines[0]).toBe('at,actor,user_id,action,target,mode,ip,details');
    const actions = lines.slice(1).map((line) => line.split(',')[3]);
    expect(actions).toEqual(['key.created', 'user.invited', 'user.signed_in', 'user.password_set', 'user.invited']);
    const filtered = await client.get('/dashboard/audit?action=key.created');
    expect(filtered.body).toContain('key.created');
    expect(filtered.body).not.toContain('<code>user.invited</code>');
    expect((await client.get('/dashboard/audit?from=yesterday')).status).toBe(400);
  });
});

import { describe, expect, test } from 'vitest';
import { createApiKey, listApiKeys } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { useApi } from '../helpers/api.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient, TEST_PASSWORD, type DashboardClient } from '../helpers/dashboard.ts';

/**
 * Dashboard roles on the server (docs/security.md): what a viewer and a developer cannot do even
 * with a valid CSRF token, other merchants' ids, and the recent password that money-routing
 * actions ask for.
 */
const db = useTestDatabase('dashboard_roles');
const api = useApi(db, { checked: false });

const keysOf = (merchantId: string) => listApiKeys(db.store, { merchantId });
const setSession = (userId: string, assignment: string) => db.store.query(`UPDATE dashboard_sessions SET ${assignment} WHERE user_id = $1`, [userId]);

async function toLive(client: DashboardClient): Promise<void> {
  expect((await client.post('/dashboard/mode', { livemode: 'true' })).status).toBe(303);
}

describe('roles are enforced on the server', () => {
  test('a viewer cannot create a key even with a forged post carrying its valid CSRF token: 403, nothing created', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer' });
    const client = await signedInClient(api.app, viewer.email);
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
    const client = await signedInClient(api.app, developer.email);
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
    const client = await signedInClient(api.app, owner.email);
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
    const devClient = await signedInClient(api.app, developer.email);
    expect((await devClient.get('/dashboard/team')).status).toBe(403);
    expect((await devClient.get('/dashboard/audit.csv')).status).toBe(403);
    expect((await devClient.post('/dashboard/team/invite', { email: 'x@example.test', role: 'owner' })).status).toBe(403);
  });
});

describe('re-authentication for money-routing actions', () => {
  test('creating a live key without a recent password asks for it, refuses a wrong one, and continues with the right one', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(api.app, owner.email);
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
    const client = await signedInClient(api.app, owner.email);
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

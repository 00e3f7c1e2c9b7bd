import { describe, expect, test } from 'vitest';
import { generate } from 'otplib';
import { reissueSignInLink, OPERATOR } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { useApi } from '../helpers/api.ts';
import { addUserWithPassword, dashboardClient, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';

/**
 * Two-factor sign-in: a sign-in link does not skip it, a code is used once, an owner can require
 * it or reset a lost device; team invitations, the last owner, and the audit log as CSV.
 */
const db = useTestDatabase('dashboard_two_factor');
const api = useApi(db, { checked: false });

describe('a sign-in link does not skip two-factor', () => {
  test('a link for a user with TOTP asks for the code before it sets anything; an owner can reset a lost device, audited', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const developer = await addUserWithPassword(db.store, { merchantId, role: 'developer' });
    const devClient = await signedInClient(api.app, developer.email);
    const started = await devClient.post('/dashboard/account/two-factor/start');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
    expect((await devClient.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret }) })).status).toBe(303);
    // The confirming code's step is spent; step back so the current code counts once more.
    await db.store.query('UPDATE dashboard_users SET totp_last_step = totp_last_step - 2 WHERE id = $1', [developer.id]);
    const passwordOf = async () => (await db.store.query('SELECT password_hash FROM dashboard_users WHERE id = $1', [developer.id])).rows[0]!.password_hash;
    const before = await passwordOf();

    // Whoever holds a new link (an owner handed it out, or it leaked) still needs the device.
    const link = await reissueSignInLink(db.store, { merchantId, userId: developer.id, actor: OPERATOR });
    const holder = dashboardClient(api.app);
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
    const strangerClient = await signedInClient(api.app, stranger.owner.email);
    expect((await strangerClient.post(`/dashboard/team/${developer.id}/two-factor/reset`)).status).toBe(404);
    const ownerClient = await signedInClient(api.app, owner.email);
    expect((await ownerClient.get('/dashboard/team')).body).toContain(`/dashboard/team/${developer.id}/two-factor/reset`);
    expect((await ownerClient.post(`/dashboard/team/${developer.id}/two-factor/reset`)).status).toBe(303);
    const { rows } = await db.store.query('SELECT totp_enabled_at FROM dashboard_users WHERE id = $1', [developer.id]);
    expect(rows[0]!.totp_enabled_at).toBeNull();
    const { rows: audit } = await db.store.query(`SELECT user_id, details FROM audit_log WHERE target = $1 AND action = 'user.totp_disabled'`, [developer.id]);
    expect(audit).toEqual([{ user_id: owner.id, details: { email: developer.email, resetByOwner: true } }]);
    const next = await reissueSignInLink(db.store, { merchantId, userId: developer.id, actor: OPERATOR });
    const afterReset = dashboardClient(api.app);
    await afterReset.get(`/dashboard/link/${next.token}`);
    expect((await afterReset.post(`/dashboard/link/${next.token}`, { password: TEST_PASSWORD, confirmation: TEST_PASSWORD })).status).toBe(303);
  });
});

describe('two-factor sign-in, team and audit', () => {
  test('a user turns TOTP on; sign-in then needs a code, used once; an owner can require it for everyone', async () => {
    const { owner, merchantId } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(api.app, owner.email);
    const started = await client.post('/dashboard/account/two-factor/start');
    expect(started.status).toBe(200);
    expect(started.body).toContain('src="data:image/png;base64,');
    const secret = /id="totp-secret">([A-Z2-7]+)</.exec(started.body)![1]!;
    expect((await client.post('/dashboard/account/two-factor/confirm', { code: '000000' })).status).toBe(400);
    // The confirming code's own time, so the "same step" below is that step even across a 30 s boundary.
    const confirmedAt = Math.floor(Date.now() / 1000);
    expect((await client.post('/dashboard/account/two-factor/confirm', { code: await generate({ secret, epoch: confirmedAt }) })).status).toBe(303);

    const signIn = dashboardClient(api.app);
    const asked = await signIn.signIn(owner.email);
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('Two-factor code');
    // The code used to confirm was spent: the same step is refused.
    expect((await signIn.signIn(owner.email, TEST_PASSWORD, { code: await generate({ secret, epoch: confirmedAt }) })).status).toBe(401);
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
    const devClient = await signedInClient(api.app, developer.email);
    const home = await devClient.get('/dashboard/developers');
    expect(home.status).toBe(303);
    expect(home.headers.location).toBe('/dashboard/account?setup=two-factor');
    expect((await devClient.post('/dashboard/developers/keys', { scope_read: '1' })).status).toBe(403);
    expect((await devClient.get('/dashboard/account')).body).toContain('requires two-factor sign-in');
  });

  test('an owner invites a developer (link shown to copy), the last owner cannot be demoted, and the audit log records it all as CSV', async () => {
    const { owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(api.app, owner.email);
    const invited = await client.post('/dashboard/team/invite', { email: 'dev@example.test', role: 'developer' });
    expect(invited.status).toBe(201);
    const link = /id="sign-in-link">(https:\/\/pay\.example\.test\/dashboard\/link\/[0-9A-Za-z]{43})</.exec(invited.body)![1]!;
    expect((await dashboardClient(api.app).get(new URL(link).pathname)).status).toBe(200);
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

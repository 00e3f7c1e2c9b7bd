import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { inviteDashboardUser, OPERATOR, useSignInLink } from '../../src/accounts/index.ts';
import { addUserWithPassword, dashboardClient, newMerchantWithOwner, signedInClient, TEST_PASSWORD } from '../helpers/dashboard.ts';

/**
 * Who a sign-in attempt counts against (issue 24): the throttle folds an email's case with the
 * same function as the lookup (Postgres `lower`), so a spelling that finds the same account
 * shares its allowance. Before, the throttle folded with JavaScript's toLowerCase, which turns
 * `İ` (capital I with dot) into `i̇` where Postgres gives `i`: `vİewer@…` signed in as
 * `viewer@…` with 5 fresh guesses, and every such spelling gave 5 more.
 */
const db = useTestDatabase('dashboard_sign_in_identity');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());
// Every request comes from one address here: each test starts with the IP's allowance whole.
beforeEach(() => db.store.query(`DELETE FROM dashboard_sign_in_failures WHERE bucket LIKE 'ip:%'`));

describe('the sign-in throttle counts per account, however the email is spelled', () => {
  test('vİewer@… (capital I with dot) finds viewer@… and shares its count: no fresh allowance', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer', email: `viewer-${merchantId.slice(-6).toLowerCase()}@example.test` });
    const dotted = viewer.email.replace('vi', 'vİ');
    expect(dotted).not.toBe(viewer.email);
    // The lookup finds the account under that spelling (Postgres lower('İ') is 'i').
    expect((await dashboardClient(app).signIn(dotted)).status).toBe(303);

    const client = dashboardClient(app);
    for (let attempt = 0; attempt < 5; attempt++) expect((await client.signIn(viewer.email, 'wrong password here')).status).toBe(401);
    for (const spelling of [dotted, dotted.toUpperCase(), viewer.email.replace('vi', 'VI')]) {
      const locked = await client.signIn(spelling, TEST_PASSWORD);
      expect(locked.status, spelling).toBe(429);
      expect(locked.body).toContain('too many sign-in attempts');
    }
  });

  test('guesses under the dotted spelling count against the account too', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const viewer = await addUserWithPassword(db.store, { merchantId, role: 'viewer', email: `viewer-${merchantId.slice(-6).toLowerCase()}@example.test` });
    const client = dashboardClient(app);
    for (let attempt = 0; attempt < 5; attempt++) {
      expect((await client.signIn(viewer.email.replace('vi', 'vİ'), 'wrong password here')).status).toBe(401);
    }
    expect((await client.signIn(viewer.email, TEST_PASSWORD)).status).toBe(429);
  });
});

describe('an email is unique per merchant, and an invitation tells nothing about other merchants', () => {
  const OTHER_PASSWORD = 'another long password for b';
  const merchantOf = async (client: ReturnType<typeof dashboardClient>) =>
    /<dt>Merchant<\/dt><dd>[^<]*<code>(mer_\w+)<\/code>/.exec((await client.get('/dashboard/account')).body)?.[1];

  test('an owner invites an address that is a user of another merchant exactly as a new one; the same merchant twice is refused', async () => {
    const a = await newMerchantWithOwner(db.store);
    const alice = await addUserWithPassword(db.store, { merchantId: a.merchantId, role: 'owner' });
    const b = await newMerchantWithOwner(db.store);
    const ownerB = await signedInClient(app, b.owner.email);
    const fresh = await ownerB.post('/dashboard/team/invite', { email: 'nobody-yet@example.test', role: 'viewer' });
    const taken = await ownerB.post('/dashboard/team/invite', { email: alice.email.toUpperCase(), role: 'viewer' });
    expect([fresh.status, taken.status]).toEqual([201, 201]);
    for (const answer of [fresh, taken]) expect(answer.body).toMatch(/id="sign-in-link">https:\/\/pay\.example\.test\/dashboard\/link\/\w{43}</);
    expect(taken.body).not.toContain(a.merchantId);
    const again = await ownerB.post('/dashboard/team/invite', { email: alice.email, role: 'developer' });
    expect(again.status).toBe(400);
    expect(again.body).toContain(`${alice.email} is already a dashboard user of this merchant`);
    const { rows } = await db.store.query('SELECT merchant_id, role FROM dashboard_users WHERE lower(email) = lower($1) ORDER BY created_at', [alice.email]);
    expect(rows).toEqual([
      { merchant_id: a.merchantId, role: 'owner' },
      { merchant_id: b.merchantId, role: 'viewer' },
    ]);
  });

  test('sign-in tells one email’s users apart by password, asks which merchant when one password opens both, and a sign-in to one never clears the other’s count', async () => {
    const a = await newMerchantWithOwner(db.store);
    const b = await newMerchantWithOwner(db.store);
    const email = `both-${a.merchantId.slice(-6).toLowerCase()}@example.test`;
    await addUserWithPassword(db.store, { merchantId: a.merchantId, role: 'owner', email });
    const { link } = await inviteDashboardUser(db.store, { merchantId: b.merchantId, email, role: 'developer', actor: OPERATOR });
    const atB = await useSignInLink(db.store, { token: link.token, password: OTHER_PASSWORD, confirmation: OTHER_PASSWORD });

    const intoA = await signedInClient(app, email);
    expect(await merchantOf(intoA)).toBe(a.merchantId);
    const intoB = dashboardClient(app);
    expect((await intoB.signIn(email, OTHER_PASSWORD)).status).toBe(303);
    expect(await merchantOf(intoB)).toBe(b.merchantId);

    // Four wrong guesses count against both users; signing in to B clears B's count only (each
    // attempt counts against every user it is checked against), so B's holder cannot reset A's.
    await db.store.query('DELETE FROM dashboard_sign_in_failures');
    const guesser = dashboardClient(app);
    for (let attempt = 0; attempt < 4; attempt++) expect((await guesser.signIn(email, 'wrong password here')).status).toBe(401);
    expect((await guesser.signIn(email, OTHER_PASSWORD)).status).toBe(303);
    const counts = await db.store.query('SELECT bucket, failures FROM dashboard_sign_in_failures WHERE bucket LIKE $1 ORDER BY bucket', ['user:%']);
    expect(Object.fromEntries(counts.rows.map((row) => [row.bucket, row.failures]))).toMatchObject({ [`user:${await idOf(a.merchantId, email)}`]: 5 });
    expect(counts.rows.find((row) => row.bucket === `user:${atB.id}`)).toBeUndefined();
    const locked = await dashboardClient(app).signIn(email, TEST_PASSWORD);
    expect(locked.status).toBe(429);
    await db.store.query('DELETE FROM dashboard_sign_in_failures');

    // One password for both: the person chooses; the choice signs in to that merchant only.
    await db.store.query('UPDATE dashboard_users SET password_hash = (SELECT password_hash FROM dashboard_users WHERE id = $1) WHERE id = $2', [
      await idOf(a.merchantId, email),
      atB.id,
    ]);
    const chooser = dashboardClient(app);
    const asked = await chooser.signIn(email, TEST_PASSWORD);
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('this email and password open more than one merchant: choose one and enter the password again');
    expect(asked.body).toContain(`<option value="${a.merchantId}">`);
    expect(asked.body).toContain(`<option value="${b.merchantId}">`);
    expect(String(asked.headers['set-cookie'] ?? '')).not.toMatch(/svc_dash=/);
    const chosen = await chooser.post('/dashboard/sign-in', { email, password: TEST_PASSWORD, merchant: b.merchantId });
    expect(chosen.status).toBe(303);
    expect(await merchantOf(chooser)).toBe(b.merchantId);
    // A merchant the password does not open is the usual refusal.
    expect((await dashboardClient(app).signIn(email, OTHER_PASSWORD, { merchant: a.merchantId })).status).toBe(401);
  });
});

async function idOf(merchantId: string, email: string): Promise<string> {
  const { rows } = await db.store.query('SELECT id FROM dashboard_users WHERE merchant_id = $1 AND email = $2', [merchantId, email]);
  return rows[0]!.id;
}

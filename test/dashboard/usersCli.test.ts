import { expect, test } from 'vitest';
import { generate } from 'otplib';
import { beginTotp, confirmTotp, createMerchant, findDashboardSession, OPERATOR, useSignInLink } from '../../src/accounts/index.ts';
import { createDashboardSession } from '../../src/accounts/index.ts';
import { useTestDatabase } from '../helpers/db.ts';
import { box } from '../helpers/api.ts';
import { addUserWithPassword, runSvc, TEST_PASSWORD } from '../helpers/dashboard.ts';

const db = useTestDatabase('dashboard_users_cli');

test('svc users create prints a single-use link (30 min), list shows the user, disable ends its sessions; mistakes are usage errors', async () => {
  const { merchant } = await createMerchant(db.store, box, { name: 'CLI Shop' });
  const env = { SVC_PUBLIC_URL: 'https://pay.example.test/' };
  const created = await runSvc(
    db.connectionString,
    ['users', 'create', '--merchant', merchant.id, '--email', 'Grace@Example.test', '--role', 'owner', '--json'],
    env,
  );
  expect(created.code, created.err).toBe(0);
  const answer = created.json();
  expect(answer.signInUrl).toMatch(/^https:\/\/pay\.example\.test\/dashboard\/link\/[0-9A-Za-z]{43}$/);
  expect(answer.user).toMatchObject({
    merchantId: merchant.id,
    email: 'Grace@Example.test',
    role: 'owner',
    hasPassword: false,
    totpEnabled: false,
    disabledAt: null,
  });
  const minutes = (Date.parse(answer.expiresAt) - Date.now()) / 60_000;
  expect(minutes).toBeGreaterThan(29);
  expect(minutes).toBeLessThanOrEqual(30);

  const human = await runSvc(db.connectionString, ['users', 'create', '--merchant', merchant.id, '--email', 'dev@example.test', '--role', 'developer'], env);
  expect(human.code).toBe(0);
  expect(human.out).toMatch(/^Created developer usr_\w+ \(dev@example\.test\) for mer_\w+\n {2}https:\/\/pay\.example\.test\/dashboard\/link\/\w{43}\n/);

  // The same email (any case) again; an unknown role; an unknown merchant.
  const duplicate = await runSvc(db.connectionString, [
    'users',
    'create',
    '--merchant',
    merchant.id,
    '--email',
    'grace@example.test',
    '--role',
    'viewer',
    '--json',
  ]);
  expect(duplicate.code).toBe(1);
  expect(JSON.parse(duplicate.err)).toEqual({ error: 'grace@example.test is already a dashboard user of this merchant' });
  expect((await runSvc(db.connectionString, ['users', 'create', '--merchant', merchant.id, '--email', 'x@example.test', '--role', 'admin'])).code).toBe(2);
  expect((await runSvc(db.connectionString, ['users', 'create', '--merchant', 'mer_nope', '--email', 'x@example.test', '--role', 'owner'])).code).toBe(2);

  const token = answer.signInUrl.split('/').pop();
  const user = await useSignInLink(db.store, { token, password: TEST_PASSWORD, confirmation: TEST_PASSWORD });
  const session = await createDashboardSession(db.store, { userId: user.id });
  expect(await findDashboardSession(db.store, session.token)).toBeDefined();

  const list = await runSvc(db.connectionString, ['users', 'list', '--merchant', merchant.id, '--json']);
  expect(list.code).toBe(0);
  expect(list.json().map((entry: { email: string; role: string; hasPassword: boolean }) => [entry.email, entry.role, entry.hasPassword])).toEqual([
    ['Grace@Example.test', 'owner', true],
    ['dev@example.test', 'developer', false],
  ]);
  expect(JSON.stringify(list.json())).not.toMatch(/scrypt|password_hash|totp_secret/);

  const disabled = await runSvc(db.connectionString, ['users', 'disable', user.id, '--json']);
  expect(disabled.code).toBe(0);
  expect(disabled.json().disabledAt).toEqual(expect.any(String));
  expect(await findDashboardSession(db.store, session.token)).toBeUndefined();
  expect((await runSvc(db.connectionString, ['users', 'list', '--merchant', merchant.id])).out).toContain('disabled');
  expect((await runSvc(db.connectionString, ['users', 'disable', 'usr_unknown'])).code).toBe(1);
});

test('svc users reset-two-factor turns a user’s TOTP off and ends its sessions, audited as the operator (the way out when no owner can)', async () => {
  const { merchant } = await createMerchant(db.store, box, { name: 'Locked Out Shop' });
  const owner = await addUserWithPassword(db.store, { merchantId: merchant.id, role: 'owner' });
  // An authenticator the owner does not have (enrolled with a stolen session, or a lost phone).
  const { secret } = await beginTotp(db.store, box, owner);
  await confirmTotp(db.store, box, { user: owner, code: await generate({ secret }), actor: OPERATOR });
  const session = await createDashboardSession(db.store, { userId: owner.id });

  const reset = await runSvc(db.connectionString, ['users', 'reset-two-factor', owner.id, '--json']);
  expect(reset.code, reset.err).toBe(0);
  expect(reset.json()).toMatchObject({ id: owner.id, email: owner.email, totpEnabled: false });
  const { rows } = await db.store.query('SELECT totp_secret_sealed, totp_enabled_at, totp_last_step FROM dashboard_users WHERE id = $1', [owner.id]);
  expect(rows[0]).toEqual({ totp_secret_sealed: null, totp_enabled_at: null, totp_last_step: null });
  expect(await findDashboardSession(db.store, session.token)).toBeUndefined();
  const { rows: audit } = await db.store.query(
    `SELECT user_id, actor, target, details FROM audit_log WHERE merchant_id = $1 AND action = 'user.totp_disabled'`,
    [merchant.id],
  );
  expect(audit).toEqual([
    { user_id: null, actor: expect.stringMatching(/^operator .*\(CLI\)$/), target: owner.id, details: { email: owner.email, resetByOperator: true } },
  ]);

  const human = await runSvc(db.connectionString, ['users', 'reset-two-factor', owner.id]);
  expect(human.out).toContain(`Reset two-factor sign-in of ${owner.id} (${owner.email})`);
  expect((await runSvc(db.connectionString, ['users', 'reset-two-factor', 'usr_unknown'])).code).toBe(1);
  expect((await runSvc(db.connectionString, ['users', 'reset-two-factor'])).code).toBe(2);
});

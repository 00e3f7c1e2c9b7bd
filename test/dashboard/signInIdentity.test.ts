import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { addUserWithPassword, dashboardClient, newMerchantWithOwner, TEST_PASSWORD } from '../helpers/dashboard.ts';

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

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient, TEST_PASSWORD, type DashboardClient } from '../helpers/dashboard.ts';
import { addWallet, getMerchantSettings, listWallets } from '../../src/accounts/index.ts';

/**
 * The Settings page over HTTP (the browser-wallet flow is in settings.browser.test.ts): wallets
 * under the API's live-key rule (owner, recent password, live mode), other merchants' wallets,
 * and the payment settings through the same domain function as the CLI.
 */
const db = useTestDatabase('dashboard_settings');
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
});
afterAll(() => app?.close());

async function liveClient(email: string): Promise<DashboardClient> {
  const client = await signedInClient(app, email);
  expect((await client.post('/dashboard/mode', { livemode: 'true' })).status).toBe(303);
  return client;
}
const challengeIdOf = (body: string) => /name="challengeId" value="([^"]+)"/.exec(body)?.[1];
const messageOf = (body: string) => /<pre id="challenge-message" class="secret">([^<]+)<\/pre>/.exec(body)![1]!.replace(/&#39;/g, "'").replace(/&amp;/g, '&');
const challenges = async (merchantId: string) =>
  (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM wallet_challenges WHERE merchant_id = $1', [merchantId])).rows[0]!.n;
const audit = async (merchantId: string) =>
  (await db.store.query('SELECT action, target FROM audit_log WHERE merchant_id = $1 AND action LIKE $2 ORDER BY id', [merchantId, 'wallet.%'])).rows;

describe('settings: receiving wallets', () => {
  test('a developer and a viewer cannot add, default or remove wallets, even with a valid CSRF token', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const wallet = await addWallet(db.store, {
      merchantId,
      chain: 'polygon',
      address: privateKeyToAccount(generatePrivateKey()).address,
      verifiedBy: 'operator',
    });
    for (const role of ['developer', 'viewer'] as const) {
      const user = await addUserWithPassword(db.store, { merchantId, role });
      const client = await liveClient(user.email);
      const page = await client.get('/dashboard/settings');
      expect(page.body).toContain(wallet.address);
      expect(page.body).not.toContain('Next: prove it is yours');
      expect((await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address: wallet.address })).status).toBe(403);
      expect((await client.post('/dashboard/settings/wallets', { challengeId: 'wch_x', signature: '0x00' })).status).toBe(403);
      expect((await client.post(`/dashboard/settings/wallets/${wallet.id}/default`)).status).toBe(403);
      expect((await client.post(`/dashboard/settings/wallets/${wallet.id}/remove`)).status).toBe(403);
      expect((await client.post('/dashboard/settings/payment', { paymentToleranceBps: '50' })).status).toBe(403);
    }
    expect(await challenges(merchantId)).toBe(0);
    expect(await listWallets(db.store, { merchantId })).toMatchObject([{ id: wallet.id, isDefault: false }]);
  });

  test('adding a wallet asks for the password when it was not entered in the last 10 minutes, then continues', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const client = await liveClient(owner.email);
    await db.store.query(`UPDATE dashboard_sessions SET reauth_at = now() - interval '11 minutes' WHERE user_id = $1`, [owner.id]);
    const address = privateKeyToAccount(generatePrivateKey()).address;
    const asked = await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address });
    expect(asked.status).toBe(401);
    expect(asked.body).toContain('Enter your password to continue');
    expect(await challenges(merchantId)).toBe(0);
    const wrong = await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address, _reauth_password: 'not it at all' });
    expect(wrong.body).toContain('that is not your password');
    expect(await challenges(merchantId)).toBe(0);
    const replayed = await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address, _reauth_password: TEST_PASSWORD });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toContain(`Prove that ${address} is yours`);
    expect(await challenges(merchantId)).toBe(1);
  });

  test('test mode lists wallets but refuses to change them, with the rule', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const refused = await client.post('/dashboard/settings/wallets/challenge', {
      chain: 'polygon',
      address: privateKeyToAccount(generatePrivateKey()).address,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('receiving wallets are managed in live mode');
    expect(await challenges(merchantId)).toBe(0);
  });

  test('a pasted signature adds the wallet as verified and default (audited); a bad one is refused with the API message and adds nothing', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const account = privateKeyToAccount(generatePrivateKey());
    const client = await liveClient(owner.email);
    const bad = await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address: '0x1234' });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('address &quot;0x1234&quot; is not a valid polygon address');

    const step = await client.post('/dashboard/settings/wallets/challenge', { chain: 'polygon', address: account.address });
    const challengeId = challengeIdOf(step.body)!;
    const other = privateKeyToAccount(generatePrivateKey());
    const forged = await client.post('/dashboard/settings/wallets', { challengeId, signature: await other.signMessage({ message: messageOf(step.body) }) });
    expect(forged.status).toBe(400);
    expect(forged.body).toContain(`signature does not verify for ${account.address} over the challenge message`);
    expect(forged.body).toContain(challengeId); // the same challenge is offered again
    expect(await listWallets(db.store, { merchantId })).toEqual([]);

    const signed = await account.signMessage({ message: messageOf(step.body) });
    const added = await client.post('/dashboard/settings/wallets', { challengeId, signature: signed, default: 'true' });
    expect(added).toMatchObject({ status: 303, headers: { location: '/dashboard/settings?done=added' } });
    const [wallet] = await listWallets(db.store, { merchantId });
    expect(wallet).toMatchObject({ address: account.address, verified: true, verificationMethod: 'eip191', isDefault: true });
    expect(await audit(merchantId)).toEqual([
      { action: 'wallet.added', target: wallet!.id },
      { action: 'wallet.default_set', target: wallet!.id },
    ]);
    // The signature is single use.
    expect((await client.post('/dashboard/settings/wallets', { challengeId, signature: signed })).body).toContain('this wallet challenge was already used');
  });

  test("another merchant's wallet answers not found and does not change", async () => {
    const mine = await newMerchantWithOwner(db.store);
    const theirs = await newMerchantWithOwner(db.store);
    const wallet = await addWallet(db.store, {
      merchantId: theirs.merchantId,
      chain: 'polygon',
      address: privateKeyToAccount(generatePrivateKey()).address,
      verifiedBy: 'operator',
    });
    const client = await liveClient(mine.owner.email);
    expect((await client.post(`/dashboard/settings/wallets/${wallet.id}/default`)).status).toBe(404);
    expect((await client.post(`/dashboard/settings/wallets/${wallet.id}/remove`)).status).toBe(404);
    expect((await client.get('/dashboard/settings')).body).not.toContain(wallet.address);
    expect(await listWallets(db.store, { merchantId: theirs.merchantId })).toMatchObject([{ id: wallet.id, isDefault: false }]);
  });
});

describe('settings: payments', () => {
  test('an owner sets the tolerance and bridged tokens; out of range is refused with the rule and changes nothing', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const refused = await client.post('/dashboard/settings/payment', { paymentToleranceBps: '2000', acceptBridgedTokens: 'true' });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('payment tolerance must be a whole number of basis points from 0 to 1000 (10%)');
    expect(await getMerchantSettings(db.store, merchantId)).toMatchObject({ paymentToleranceBps: 0, acceptBridgedTokens: false });
    expect((await client.post('/dashboard/settings/payment', { paymentToleranceBps: '50', acceptBridgedTokens: 'true' })).status).toBe(303);
    expect(await getMerchantSettings(db.store, merchantId)).toMatchObject({ paymentToleranceBps: 50, acceptBridgedTokens: true });
    const page = await client.get('/dashboard/settings?done=payment');
    expect(page.body).toContain('Payment settings saved.');
    expect(page.body).toContain('value="50"');
  });

  test('an owner chooses the default attribution (audited); a bad value is refused and changes nothing', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const client = await signedInClient(app, owner.email);
    const form = { paymentToleranceBps: '0', acceptBridgedTokens: 'false' };
    const refused = await client.post('/dashboard/settings/payment', { ...form, defaultAttribution: 'wallet' });
    expect([refused.status, refused.body.includes('default attribution must be')]).toEqual([400, true]);
    expect(await getMerchantSettings(db.store, merchantId)).toMatchObject({ defaultAttribution: 'amount' });
    expect((await client.post('/dashboard/settings/payment', { ...form, defaultAttribution: 'address' })).status).toBe(303);
    expect(await getMerchantSettings(db.store, merchantId)).toMatchObject({ defaultAttribution: 'address' });
    expect((await client.get('/dashboard/settings')).body).toContain('<option value="address" selected>');
    const { rows } = await db.store.query(
      `SELECT details FROM audit_log WHERE merchant_id = $1 AND action = 'merchant.settings_changed' ORDER BY id DESC LIMIT 1`,
      [merchantId],
    );
    expect(rows[0]!.details).toMatchObject({ defaultAttribution: 'address' });
  });
});

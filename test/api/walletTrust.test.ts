import { describe, expect, test } from 'vitest';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet, MAX_UNVERIFIED_WALLETS } from '../../src/accounts/index.ts';
import { newMerchant, WALLET, useApi } from '../helpers/api.ts';

/**
 * Receiving wallets decide where live money goes: only a live key with the write scope manages
 * them, the default wallet per chain is chosen explicitly (never "the oldest"), a wallet in use
 * is not removed, and one merchant makes the gateway watch a bounded number of unverified ones.
 */
const db = useTestDatabase('api_wallet_trust');
const { call } = useApi(db);

const TEST_KEY_403 =
  'receiving wallets are managed with a live API key (write scope): a test key may list them but not add, verify, remove or choose the default wallet, since live payments are paid to them';
const payment = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'polygon', ...extra });

/** Adds a fresh EVM wallet through the API (challenge, signature) with `key`; returns the answer and the address. */
async function addSigned(key: string, options: { chain?: string; default?: boolean } = {}) {
  const account = privateKeyToAccount(generatePrivateKey());
  const challenge = await call('POST', '/api/v1/wallets/challenges', { key, body: { chain: options.chain ?? 'polygon', address: account.address } });
  if (challenge.status !== 201) return { answer: challenge, address: account.address };
  const signature = await account.signMessage({ message: challenge.body.message });
  const body = { challengeId: challenge.body.id, signature, ...(options.default === undefined ? {} : { default: options.default }) };
  return { answer: await call('POST', '/api/v1/wallets', { key, body }), address: account.address };
}

async function walletRows(merchantId: string) {
  const { rows } = await db.store.query('SELECT id, address, verified_at IS NOT NULL AS verified, is_default FROM wallets WHERE merchant_id = $1 ORDER BY id', [
    merchantId,
  ]);
  return rows;
}

describe('only a live key with the write scope manages receiving wallets', () => {
  test('a test key gets 403 on challenge, add (verify), default and remove, before its body is read, and changes nothing; it may still list', async () => {
    const m = await newMerchant(db.store);
    const own = await addSigned(m.live, { default: true });
    const account = privateKeyToAccount(generatePrivateKey());
    expect(await call('POST', '/api/v1/wallets/challenges', { key: m.test, body: { chain: 'polygon', address: account.address } })).toMatchObject({
      status: 403,
      body: { error: TEST_KEY_403 },
    });
    // Even a valid challenge and signature (obtained some other way) do not help a test key.
    const challenge = await call('POST', '/api/v1/wallets/challenges', { key: m.live, body: { chain: 'polygon', address: account.address } });
    const signature = await account.signMessage({ message: challenge.body.message });
    expect(await call('POST', '/api/v1/wallets', { key: m.test, body: { challengeId: challenge.body.id, signature, default: true } })).toMatchObject({
      status: 403,
      body: { error: TEST_KEY_403 },
    });
    expect(await call('POST', '/api/v1/wallets', { key: m.test, body: { nonsense: 1 } })).toMatchObject({ status: 403, body: { error: TEST_KEY_403 } });
    expect(await call('POST', `/api/v1/wallets/${own.answer.body.id}/default`, { key: m.test })).toMatchObject({ status: 403, body: { error: TEST_KEY_403 } });
    expect(await call('DELETE', `/api/v1/wallets/${own.answer.body.id}`, { key: m.sk })).toMatchObject({ status: 403, body: { error: TEST_KEY_403 } });
    const before = await walletRows(m.id);
    expect(before).toHaveLength(1);
    const listed = await call('GET', '/api/v1/wallets', { key: m.test });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toMatchObject([{ id: own.answer.body.id, address: own.address, default: true }]);
    expect(await walletRows(m.id)).toEqual(before);
  });

  test('a read-only live key gets 403 on every wallet change and may list', async () => {
    const m = await newMerchant(db.store);
    const readOnly = await m.key(true, ['read']);
    const own = await addSigned(m.live);
    const scope403 = (method: string) => ({ status: 403, body: { error: `this API key lacks the "write" scope needed for ${method} requests` } });
    expect(await call('POST', '/api/v1/wallets/challenges', { key: readOnly, body: { chain: 'polygon', address: WALLET } })).toMatchObject(scope403('POST'));
    expect(await call('POST', '/api/v1/wallets', { key: readOnly, body: { challengeId: 'wch_x', signature: '0x00' } })).toMatchObject(scope403('POST'));
    expect(await call('POST', `/api/v1/wallets/${own.answer.body.id}/default`, { key: readOnly })).toMatchObject(scope403('POST'));
    expect(await call('DELETE', `/api/v1/wallets/${own.answer.body.id}`, { key: readOnly })).toMatchObject(scope403('DELETE'));
    expect((await call('GET', '/api/v1/wallets', { key: readOnly })).body.data).toHaveLength(1);
    expect((await walletRows(m.id))[0]).toMatchObject({ is_default: false });
  });

  test('the attack: a sandbox key cannot redirect live payments that name no merchantWallet to a wallet it controls', async () => {
    const m = await newMerchant(db.store);
    const attacker = await addSigned(m.test, { default: true });
    expect(attacker.answer.status).toBe(403);
    const noWallet = payment();
    const live = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(live.status).toBe(400);
    expect(live.body.error).toMatch(/^merchantWallet is required: this merchant has no default wallet on polygon/);
    // A verified wallet from before the fix (a test key could add one then), older than the
    // merchant's own, is still never used because it is the oldest, nor because it is the only
    // verified one (migration 033 marks it): only the chosen default is.
    const legacy = await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: attacker.address, verifiedBy: 'eip191' });
    await db.store.query('UPDATE wallets SET sole_wallet_payable = false WHERE id = $1', [legacy.id]);
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).status).toBe(400);
    const own = await addSigned(m.live, { default: true });
    const paid = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(paid).toMatchObject({ status: 201, body: { merchantWallet: own.address } });
    const link = await call('POST', '/api/v1/payment-links', { key: m.live, body: noWallet });
    expect(link.status).toBe(201);
    const visit = await call('GET', `/pay/${link.body.id}`);
    expect(visit.status).toBe(303);
    const { rows } = await db.store.query('SELECT DISTINCT pay_to FROM payment_sessions WHERE merchant_id = $1 AND livemode', [m.id]);
    expect(rows).toEqual([{ pay_to: own.address }]);
  });
});

describe('the default wallet per chain is explicit', () => {
  test('adding a second wallet never changes the default; "default": true and POST /wallets/{id}/default move it; one per chain', async () => {
    const m = await newMerchant(db.store);
    const noWallet = payment();
    const first = await addSigned(m.live, { default: true });
    expect(first.answer).toMatchObject({ status: 201, body: { default: true, verified: true } });
    const second = await addSigned(m.live);
    expect(second.answer).toMatchObject({ status: 201, body: { default: false } });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.merchantWallet).toBe(first.address);

    const moved = await call('POST', `/api/v1/wallets/${second.answer.body.id}/default`, { key: m.live });
    expect(moved).toMatchObject({ status: 200, body: { id: second.answer.body.id, default: true } });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.merchantWallet).toBe(second.address);
    const third = await addSigned(m.live, { default: true });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.merchantWallet).toBe(third.address);
    const listed = (await call('GET', '/api/v1/wallets?chain=polygon', { key: m.live })).body.data;
    expect(listed.filter((wallet: { default: boolean }) => wallet.default).map((wallet: { id: string }) => wallet.id)).toEqual([third.answer.body.id]);

    // Another chain has its own default (none yet).
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: { ...noWallet, chain: 'base' } })).status).toBe(400);
    // Only a verified wallet of this merchant can be the default.
    await call('POST', '/api/v1/payments', { key: m.live, body: payment({ merchantWallet: WALLET }) });
    const inline = (await walletRows(m.id)).find((row) => row.address === WALLET)!;
    expect(await call('POST', `/api/v1/wallets/${inline.id}/default`, { key: m.live })).toMatchObject({
      status: 409,
      body: { error: expect.stringMatching(/is not verified, so it cannot be the default/) },
    });
    const other = await newMerchant(db.store, 'Other');
    expect((await call('POST', `/api/v1/wallets/${third.answer.body.id}/default`, { key: other.live })).status).toBe(404);
    // The database holds the rule too: a second default on one chain is refused.
    await expect(db.store.query('UPDATE wallets SET is_default = true WHERE id = $1', [first.answer.body.id])).rejects.toThrow(/wallets_one_default/);
    await expect(db.store.query('UPDATE wallets SET is_default = true WHERE id = $1', [inline.id])).rejects.toThrow(/wallets_default_is_verified/);
  });
});

describe('removing a wallet', () => {
  test('refused (409) while a live session in its monitoring window or an active live link pays it; the default removed leaves no default', async () => {
    const m = await newMerchant(db.store);
    const noWallet = payment();
    const kept = await addSigned(m.live);
    const removable = await addSigned(m.live, { default: true });
    const session = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(session.body.merchantWallet).toBe(removable.address);
    const refused = await call('DELETE', `/api/v1/wallets/${removable.answer.body.id}`, { key: m.live });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(
      new RegExp(
        `^wallet ${removable.answer.body.id} \\(polygon:${removable.address}\\) is the receiving wallet of 1 live session\\(s\\) still watched for payment`,
      ),
    );
    expect(await walletRows(m.id)).toHaveLength(2);

    // Its window closes: removable, unless an active live link names it.
    await db.store.query(`UPDATE payment_sessions SET expires_at = now() - interval '2 hours', monitor_until = now() - interval '1 hour' WHERE id = $1`, [
      session.body.id,
    ]);
    const link = await call('POST', '/api/v1/payment-links', { key: m.live, body: payment({ merchantWallet: removable.address }) });
    const byLink = await call('DELETE', `/api/v1/wallets/${removable.answer.body.id}`, { key: m.live });
    expect(byLink).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining(`is the wallet of active payment link(s) ${link.body.id}; deactivate them first`) },
    });
    await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.live, body: { active: false } });
    expect(await call('DELETE', `/api/v1/wallets/${removable.answer.body.id}`, { key: m.live })).toMatchObject({
      status: 200,
      body: { id: removable.answer.body.id, deleted: true },
    });
    expect((await call('DELETE', `/api/v1/wallets/${removable.answer.body.id}`, { key: m.live })).status).toBe(404);

    // The old session still says where it pays; no other wallet became the default (the one
    // left is paid because it is the chain's only verified wallet, spec §4.2, not as a default).
    expect((await call('GET', `/api/v1/payments/${session.body.id}`, { key: m.live })).body.merchantWallet).toBe(removable.address);
    expect(await walletRows(m.id)).toEqual([{ id: kept.answer.body.id, address: kept.address, verified: true, is_default: false }]);
    const after = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(after).toMatchObject({ status: 201, body: { merchantWallet: kept.address } });
  });
});

describe('unverified inline wallets are capped per merchant', () => {
  const address = (i: number) => `0x${i.toString(16).padStart(6, '0')}${'cd'.repeat(17)}`;

  test(`at ${MAX_UNVERIFIED_WALLETS} in use, a new inline address is a 409 that writes nothing; known and verified ones still work; unused ones make room`, async () => {
    expect(MAX_UNVERIFIED_WALLETS).toBe(100);
    const m = await newMerchant(db.store);
    const sessions: string[] = [];
    for (let i = 1; i <= MAX_UNVERIFIED_WALLETS; i++) {
      const created = await call('POST', '/api/v1/sessions', { key: m.live, body: payment({ merchantWallet: address(i) }) });
      expect(created.status).toBe(201);
      sessions.push(created.body.id);
    }
    const count = async () =>
      (
        await db.store.query(
          'SELECT (SELECT count(*) FROM wallets WHERE merchant_id = $1)::int AS w, (SELECT count(*) FROM payment_sessions WHERE merchant_id = $1)::int AS s',
          [m.id],
        )
      ).rows[0];
    const before = await count();
    const over = await call('POST', '/api/v1/sessions', { key: m.live, body: payment({ merchantWallet: address(101) }) });
    expect(over.status).toBe(409);
    expect(over.body.error).toMatch(
      /^this merchant already has 100 unverified receiving wallets in use by open live sessions or active payment links, the most the gateway watches for one merchant; verify the wallets/,
    );
    expect(await count()).toEqual(before);
    // A wallet already watched, and a verified one, do not need a new place.
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: payment({ merchantWallet: address(7) }) })).status).toBe(201);
    const verified = await addSigned(m.live);
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: payment({ merchantWallet: verified.address }) })).status).toBe(201);
    // Sandbox sessions add no wallet at all.
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: payment({ merchantWallet: address(102) }) })).status).toBe(201);

    // Two sessions' monitoring windows close: their wallets are forgotten when room is needed.
    await db.store.query(`UPDATE payment_sessions SET expires_at = now() - interval '2 hours', monitor_until = now() - interval '1 hour' WHERE id = ANY($1)`, [
      [sessions[0], sessions[1]],
    ]);
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: payment({ merchantWallet: address(101) }) })).status).toBe(201);
    const { rows } = await db.store.query<{ address: string }>('SELECT address FROM wallets WHERE merchant_id = $1 AND verified_at IS NULL', [m.id]);
    expect(rows).toHaveLength(MAX_UNVERIFIED_WALLETS - 1);
    const watched = new Set(rows.map((row) => row.address.toLowerCase()));
    expect([watched.has(address(1)), watched.has(address(2)), watched.has(address(101)), watched.has(address(100))]).toEqual([false, false, true, true]);
  });
});

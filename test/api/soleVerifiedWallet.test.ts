import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { newMerchant, WALLET, useApi } from '../helpers/api.ts';

/**
 * Spec §4.2: `merchantWallet` is "optional when a verified wallet is already configured". A
 * chain's explicit default wins; without one, the chain's only verified wallet is paid; two
 * verified wallets and no default are a 400 (never a guess), on both interfaces and for links.
 */
const db = useTestDatabase('api_sole_verified_wallet');
const { call } = useApi(db);

const OTHER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';
const THIRD = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';
const noWallet = { amount: '25', currency: 'USDC', chain: 'polygon' };

/** The address a live creation without merchantWallet pays, through Interface A and B, or their 400s. */
async function both(key: string) {
  const a = await call('POST', '/api/v1/sessions', { key, body: noWallet });
  const b = await call('POST', '/api/v1/payments', { key, body: noWallet });
  return {
    sessions: a.status === 201 ? a.body.paymentAddress : { status: a.status, error: a.body.error },
    payments: b.status === 201 ? b.body.merchantWallet : { status: b.status, error: b.body.error },
  };
}

async function liveSessions(merchantId: string): Promise<number> {
  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1 AND livemode', [merchantId]);
  return rows[0]!.n;
}

describe('merchantWallet is optional when one verified wallet is configured', () => {
  test('the operator verified one polygon wallet (svc merchants create --wallet), no default: both interfaces pay it', async () => {
    const m = await newMerchant(db.store);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
    // An unverified (inline) wallet does not count, and does not make the choice ambiguous.
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OTHER });
    expect(await both(m.live)).toEqual({ sessions: WALLET, payments: WALLET });
    // The row is not made the default: it is paid because it is the only verified one.
    const { rows } = await db.store.query('SELECT is_default FROM wallets WHERE merchant_id = $1 AND address = $2', [m.id, WALLET]);
    expect(rows).toEqual([{ is_default: false }]);
    // A payment link (and its visits) follow the same rule.
    const link = await call('POST', '/api/v1/payment-links', { key: m.live, body: noWallet });
    expect(link.status).toBe(201);
    const visit = await call('GET', `/pay/${link.body.id}`);
    expect(visit.status).toBe(303);
    const { rows: paid } = await db.store.query('SELECT DISTINCT pay_to FROM payment_sessions WHERE merchant_id = $1 AND livemode', [m.id]);
    expect(paid).toEqual([{ pay_to: WALLET }]);
    // Another chain with no verified wallet is still the 400.
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: { ...noWallet, chain: 'base' } })).body.error).toMatch(
      /^merchantWallet is required: this merchant has no default wallet on base; pass merchantWallet/,
    );
  });

  test('two verified wallets and no default: a clear 400 on both interfaces, nothing written; a default settles it', async () => {
    const m = await newMerchant(db.store);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OTHER, verifiedBy: 'eip191' });
    const error =
      'merchantWallet is required: this merchant has several verified wallets on polygon and none is the default; pass merchantWallet, or choose a default with a live key (POST /wallets/{id}/default, or "default": true when adding the wallet)';
    expect(await both(m.live)).toEqual({ sessions: { status: 400, error }, payments: { status: 400, error } });
    expect((await call('POST', '/api/v1/payment-links', { key: m.live, body: noWallet })).body.error).toBe(error);
    expect(await liveSessions(m.id)).toBe(0);
    // The explicit default wins over the rule, whatever the count.
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OTHER, verifiedBy: 'eip191', makeDefault: true });
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: THIRD, verifiedBy: 'operator' });
    expect(await both(m.live)).toEqual({ sessions: OTHER, payments: OTHER });
  });

  test('removing one of two verified wallets leaves the other paid, without making it the default', async () => {
    const m = await newMerchant(db.store);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
    const second = await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OTHER, verifiedBy: 'operator' });
    expect((await both(m.live)).payments).toMatchObject({ status: 400 });
    expect((await call('DELETE', `/api/v1/wallets/${second.id}`, { key: m.live })).status).toBe(200);
    expect(await both(m.live)).toEqual({ sessions: WALLET, payments: WALLET });
  });

  test('a sole wallet that migration 033 marked (verified before test keys were barred) is not paid until chosen', async () => {
    const m = await newMerchant(db.store);
    const old = await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: OTHER, verifiedBy: 'eip191' });
    await db.store.query('UPDATE wallets SET sole_wallet_payable = false WHERE id = $1', [old.id]);
    const answer = await call('POST', '/api/v1/sessions', { key: m.live, body: noWallet });
    expect(answer).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^merchantWallet is required: .*its one verified wallet there was verified before test keys were barred/) },
    });
    expect(await liveSessions(m.id)).toBe(0);
    // Chosen explicitly (a live key), it is paid.
    expect((await call('POST', `/api/v1/wallets/${old.id}/default`, { key: m.live })).status).toBe(200);
    expect(await both(m.live)).toEqual({ sessions: OTHER, payments: OTHER });
  });

  test('sandbox sessions never pay a real wallet, sole verified or not', async () => {
    const m = await newMerchant(db.store);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
    const created = await call('POST', '/api/v1/payments', { key: m.test, body: noWallet });
    expect(created.status).toBe(201);
    expect(created.body.merchantWallet).not.toBe(WALLET);
  });
});

import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi, createClient, EVERY_CHAIN_LIVE, newMerchant, payer, useApi, WALLET } from '../helpers/api.ts';

/**
 * The API's read resources: the payments list (pages, filters, bad parameters), currencies,
 * status, wallets with their signed challenge, and fees. Payment links are in paymentLinks.test.ts,
 * refunds in refunds.test.ts.
 */
const db = useTestDatabase('api_resources');
const api = useApi(db);
const { call } = api;

const payment = (extra: Record<string, unknown> = {}) => ({ amount: '10', currency: 'USDC', chain: 'base', merchantWallet: WALLET, ...extra });

describe('GET /payments', () => {
  test('newest first, cursor pages with limit, filters by status, chain, currency and creation time', async () => {
    const m = await newMerchant(db.store);
    const ids: string[] = [];
    for (const [i, chain] of ['base', 'polygon', 'base', 'optimism', 'arbitrum'].entries()) {
      ids.push((await call('POST', '/api/v1/payments', { key: m.test, body: payment({ chain, currency: i === 4 ? 'USDT' : 'USDC' }) })).body.id);
    }
    const newestFirst = [...ids].reverse();
    const page1 = await call('GET', '/api/v1/payments?limit=2', { key: m.test, as: 'x-api-key' });
    expect(page1.body.data.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body).toMatchObject({ hasMore: true, nextCursor: newestFirst[1] });
    const page2 = await call('GET', `/v1/payments?limit=2&startingAfter=${page1.body.nextCursor}`, { key: m.test });
    expect(page2.body.data.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(2, 4));
    const page3 = await call('GET', `/api/v1/payments?limit=2&startingAfter=${page2.body.nextCursor}`, { key: m.test });
    expect(page3.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(page3.body.data.map((p: { id: string }) => p.id)).toEqual(newestFirst.slice(4));

    expect((await call('GET', '/api/v1/payments?chain=base', { key: m.test })).body.data.length).toBe(2);
    expect((await call('GET', '/api/v1/payments?currency=USDT', { key: m.test })).body.data.map((p: { id: string }) => p.id)).toEqual([ids[4]]);
    await db.store.query(`UPDATE payment_sessions SET status = 'confirmed', confirmed_at = now() WHERE id = $1`, [ids[0]]);
    expect((await call('GET', '/api/v1/payments?status=confirmed', { key: m.test })).body.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);
    expect((await call('GET', '/api/v1/payments?status=pending', { key: m.test })).body.data.length).toBe(4);
    await db.store.query(`UPDATE payment_sessions SET created_at = '2026-01-01T00:00:00Z' WHERE id = $1`, [ids[1]]);
    const old = await call('GET', '/api/v1/payments?createdLt=2026-02-01T00:00:00Z', { key: m.test });
    expect(old.body.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
    expect((await call('GET', '/api/v1/payments?createdGte=2026-02-01T00:00:00Z', { key: m.test })).body.data.length).toBe(4);
    expect((await call('GET', '/api/v1/payments', { key: m.test })).body.data.length).toBe(5);
  });

  test('bad list parameters are 400s', async () => {
    const m = await newMerchant(db.store);
    expect(await call('GET', '/api/v1/payments?limit=0', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'query parameter limit must be at least 1' },
    });
    expect(await call('GET', '/api/v1/payments?limit=101', { key: m.test })).toMatchObject({ status: 400 });
    expect(await call('GET', '/api/v1/payments?limit=ten', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'query parameter limit must be an integer' },
    });
    expect(await call('GET', '/api/v1/payments?status=paid', { key: m.test })).toMatchObject({ status: 400 });
    expect(await call('GET', '/api/v1/payments?createdGte=yesterday', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'query parameter createdGte must be an ISO 8601 date-time' },
    });
    expect(await call('GET', '/api/v1/payments?sort=asc', { key: m.test })).toMatchObject({ status: 400, body: { error: 'unknown query parameter "sort"' } });
    expect(await call('GET', '/api/v1/payments?startingAfter=ses_unknown', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'startingAfter "ses_unknown" is not a payment of this account' },
    });
  });
});

describe('currencies, status, wallets', () => {
  test('GET /currencies lists each currency × chain with token addresses, decimals and the confirmation rule', async () => {
    const m = await newMerchant(db.store);
    const answer = await call('GET', '/api/v1/currencies', { key: m.test, as: 'x-api-key' });
    expect(answer.body.data.length).toBe(12);
    expect(answer.body.data.find((entry: { chain: string; currency: string }) => entry.chain === 'bsc' && entry.currency === 'USDT')).toMatchObject({
      decimals: 18,
      tokens: [{ address: '0x55d398326f99059fF775485246999027B3197955', decimals: 18 }],
      confirmations: { required: 15, rule: '15' },
    });
    expect(answer.body.data.find((entry: { chain: string; currency: string }) => entry.chain === 'solana' && entry.currency === 'USDC')).toMatchObject({
      confirmations: { required: 32, rule: 'confirmed' },
    });
    // Filters, on both interfaces; a misspelt one is a 400, never an unfiltered list.
    const bsc = await call('GET', '/v1/currencies?chain=bsc', { key: m.test, as: 'x-api-key' });
    expect(bsc.body.data.map((entry: { chain: string; currency: string }) => `${entry.currency}@${entry.chain}`)).toEqual(['USDT@bsc', 'USDC@bsc']);
    expect((await call('GET', '/api/v1/currencies?chain=bsc&currency=USDC', { key: m.test })).body.data).toHaveLength(1);
    expect(await call('GET', '/api/v1/currencies?chain=tron', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('query parameter chain must be one of') },
    });
    expect(await call('GET', '/api/v1/currencies?network=bsc', { key: m.test })).toMatchObject({
      status: 400,
      body: { error: 'unknown query parameter "network"' },
    });
  });

  test('GET /status: a test key sees the simulated chains healthy however long ago they moved; live chains without RPC are sandbox-only (more in status.test.ts)', async () => {
    const m = await newMerchant(db.store);
    await db.store.query(
      `INSERT INTO chain_heads (livemode, chain, head_block, processed_block, head_seen_at) VALUES (false, 'polygon', 1234, 1230, now()), (false, 'base', 99, 99, now() - interval '1 hour')`,
    );
    const sandbox = await call('GET', '/api/v1/status', { key: m.test });
    expect(sandbox.body).toMatchObject({ status: 'healthy', reasons: [] });
    expect(sandbox.body.chains.find((chain: { chain: string }) => chain.chain === 'polygon')).toMatchObject({
      mode: 'sandbox',
      status: 'healthy',
      processedBlock: '1230',
      lagSeconds: 0,
    });
    expect(sandbox.body.chains.find((chain: { chain: string }) => chain.chain === 'base')).toMatchObject({
      status: 'healthy',
      processedBlock: '99',
      lagSeconds: 0,
    });
    expect(sandbox.body.chains.find((chain: { chain: string }) => chain.chain === 'bsc')).toMatchObject({ status: 'healthy', processedBlock: null });
    // This file's API has every chain live; one without RPC URLs reports them sandbox-only, and is degraded.
    const bare = buildApi(db.store, { env: Object.fromEntries(Object.keys(EVERY_CHAIN_LIVE).map((name) => [name, ''])) });
    const live = await createClient(bare)('GET', '/v1/status', { key: m.live });
    await bare.close();
    expect(live.body.status).toBe('degraded');
    expect(live.body.chains.every((chain: { status: string }) => chain.status === 'sandbox-only')).toBe(true);
  });

  test('wallets (live key): challenge, sign with the wallet (EIP-191), add as verified and default; bad or reused proofs are refused', async () => {
    const m = await newMerchant(db.store);
    expect((await call('GET', '/api/v1/wallets', { key: m.test })).body).toEqual({ data: [] });
    const challenge = await call('POST', '/api/v1/wallets/challenges', { key: m.live, body: { chain: 'polygon', address: payer.address.toLowerCase() } });
    expect(challenge.status).toBe(201);
    expect(challenge.body.address).toBe(payer.address);
    const wrong = await call('POST', '/api/v1/wallets', {
      key: m.live,
      body: { challengeId: challenge.body.id, signature: await payer.signMessage({ message: 'something else' }) },
    });
    expect(wrong).toMatchObject({ status: 400, body: { error: `signature does not verify for ${payer.address} over the challenge message` } });
    const signature = await payer.signMessage({ message: challenge.body.message });
    const added = await call('POST', '/api/v1/wallets', { key: m.live, body: { challengeId: challenge.body.id, signature, default: true } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ chain: 'polygon', address: payer.address, verified: true, verificationMethod: 'eip191', default: true });
    expect(await call('POST', '/api/v1/wallets', { key: m.live, body: { challengeId: challenge.body.id, signature } })).toMatchObject({
      status: 400,
      body: { error: 'this wallet challenge was already used; request a new one' },
    });
    expect((await call('POST', '/api/v1/wallets', { key: m.live, body: { challengeId: 'wch_nope', signature } })).status).toBe(404);
    expect(await call('POST', '/api/v1/wallets/challenges', { key: m.live, body: { chain: 'solana', address: WALLET } })).toMatchObject({ status: 400 });
    expect((await call('GET', '/api/v1/wallets?chain=polygon', { key: m.test })).body.data.map((w: { address: string }) => w.address)).toEqual([payer.address]);
    // The default wallet now receives live payments without merchantWallet (sandbox ones still pay to the sandbox address).
    const { merchantWallet: _w, ...noWallet } = payment({ chain: 'polygon' });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.merchantWallet).toBe(payer.address);
  });
});

describe('fees', () => {
  test('GET /fees sums the 1% fee of confirmed and settled payments per chain and currency, for the key’s mode only', async () => {
    const m = await newMerchant(db.store);
    const paid = [];
    for (const amount of ['10', '0.5', '123.45']) {
      const created = await call('POST', '/api/v1/payments', { key: m.test, body: payment({ amount }) });
      paid.push(created.body.id);
    }
    const open = await call('POST', '/api/v1/payments', { key: m.test, body: payment({ amount: '999' }) });
    await db.store.query(`UPDATE payment_sessions SET status = 'confirmed' WHERE id = ANY($1)`, [paid.slice(0, 2)]);
    await db.store.query(`UPDATE payment_sessions SET status = 'settled' WHERE id = $1`, [paid[2]]);
    const fees = await call('GET', '/api/v1/fees', { key: m.test });
    expect(fees.status).toBe(200);
    // 1% of 10, 0.5 and 123.45 USDC, in base units rounded half up: 100000 + 5000 + 1234500.
    expect(fees.body).toEqual({
      object: 'fee_summary',
      rate: '0.01',
      livemode: false,
      data: [{ chain: 'base', currency: 'USDC', payments: 3, fee: '1.3395', feeBaseUnits: '1339500' }],
    });
    expect(open.status).toBe(201);
    expect((await call('GET', '/v1/fees', { key: m.live })).body).toEqual({ object: 'fee_summary', rate: '0.01', livemode: true, data: [] });
  });
});

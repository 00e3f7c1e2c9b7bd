import { describe, expect, test } from 'vitest';
import { getBase58Encoder } from '@solana/kit';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { countSessions, newMerchant, PUBLIC_URL, SOLANA_WALLET, WALLET, useApi } from '../helpers/api.ts';

/**
 * Creating a session: one session read through both interfaces, and what a payer needs of it
 * (reference, decimals, depth, the wallet it pays to). Due amounts are in dueAmounts.test.ts,
 * validation in sessionValidation.test.ts.
 */
const db = useTestDatabase('api_sessions');
const api = useApi(db);
const { call } = api;

const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...extra });

const sessionsOf = (merchantId: string) => countSessions(db.store, merchantId);

describe('one session, two interfaces', () => {
  test('POST /api/v1/sessions (Bearer) answers 201 with §2.1 fields; GET /v1/payments/:id (X-API-Key) reads it as §2.2 `pending`', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', {
      key: m.test,
      body: body({ metadata: { order: '42' }, successUrl: 'https://shop.example/ok', expiresIn: 600 }),
    });
    expect(created.status).toBe(201);
    const a = created.body;
    expect(a).toMatchObject({
      status: 'created',
      amount: '25',
      currency: 'USDC',
      chain: 'polygon',
      // A sandbox session pays to the merchant's sandbox address, never to the wallet given.
      paymentAddress: sandboxWallet('polygon', m.id),
      txHash: null,
      confirmations: 0,
      metadata: { order: '42' },
      amountDue: '25',
      amountDueBaseUnits: '25000000',
      decimals: 6,
      fee: '0.25',
      feeBaseUnits: '250000',
      tokens: [{ symbol: 'USDC', address: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359' }],
      requiredConfirmations: 32,
      livemode: false,
      successUrl: 'https://shop.example/ok',
    });
    expect(a.id).toMatch(/^ses_[0-9A-Za-z]{20}$/);
    expect(a.checkoutUrl).toBe(`${PUBLIC_URL}/checkout/${a.id}`);
    expect(new Date(a.expiresAt).getTime() - new Date(a.createdAt).getTime()).toBe(600_000);

    const polled = await call('GET', `/api/v1/sessions/${a.id}`, { key: m.test });
    expect(polled.status).toBe(200);
    expect(polled.body).toEqual(a);

    const b = await call('GET', `/v1/payments/${a.id}`, { key: m.test, as: 'x-api-key' });
    expect(b.status).toBe(200);
    expect(b.body).toEqual({ ...a, status: 'pending' });
    expect(b.body).toMatchObject({ displayAmount: '25.00', merchantWallet: sandboxWallet('polygon', m.id) });
  });

  test('POST /v1/payments (X-API-Key) answers 201 `pending`; Interface A reads the same session as `created`', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/v1/payments', { key: m.test, as: 'x-api-key', body: body({ amount: '1.000050' }) });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'pending', displayAmount: '1.00005', merchantWallet: sandboxWallet('polygon', m.id) });
    // `amount` echoes the number canonically; `displayAmount` keeps the currency's cents.
    const cents = await call('POST', '/v1/payments', { key: m.test, as: 'x-api-key', body: body({ amount: '19.90' }) });
    expect(cents.body).toMatchObject({ amount: '19.9', displayAmount: '19.90' });
    const whole = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '5.00' }) });
    expect(whole.body).toMatchObject({ amount: '5', displayAmount: '5.00' });
    // 1% of 1000050 base units is 10000.5: rounded half up.
    expect(created.body.feeBaseUnits).toBe('10001');
    const a = await call('GET', `/api/v1/sessions/${created.body.id}`, { key: m.test, as: 'x-api-key' });
    expect(a.body.status).toBe('created');
    const viaBearerOnB = await call('GET', `/api/v1/payments/${created.body.id}`, { key: m.test });
    expect(viaBearerOnB.status).toBe(200);
  });

  test('POST /checkout/sessions answers 201 with a checkout URL; a svc_sk_ key works on both interfaces', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/checkout/sessions', { key: m.sk, as: 'x-api-key', body: body() });
    expect(created.status).toBe(201);
    expect(created.body.checkoutUrl).toBe(`${PUBLIC_URL}/checkout/${created.body.id}`);
    expect((await call('GET', `/v1/sessions/${created.body.id}`, { key: m.sk })).status).toBe(200);
  });
});

describe('what a payer needs', () => {
  test('solana sessions carry a fresh 32-byte Solana Pay reference and the finalized depth (32)', async () => {
    const m = await newMerchant(db.store);
    const one = await call('POST', '/api/v1/payments', { key: m.test, body: body({ chain: 'solana', currency: 'USDT', merchantWallet: SOLANA_WALLET }) });
    const two = await call('POST', '/api/v1/payments', { key: m.test, body: body({ chain: 'solana', currency: 'USDT', merchantWallet: SOLANA_WALLET }) });
    expect(one.status).toBe(201);
    expect(getBase58Encoder().encode(one.body.reference).length).toBe(32);
    expect(one.body.reference).not.toBe(two.body.reference);
    expect(one.body).toMatchObject({ requiredConfirmations: 32, tokens: [{ symbol: 'USDT', address: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB' }] });
  });

  test('bsc amounts have 18 decimals; EVM sessions have no reference and the chain depth', async () => {
    const m = await newMerchant(db.store);
    const created = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ chain: 'bsc', currency: 'USDT', amount: '0.123456789012345678' }) });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ decimals: 18, amountDueBaseUnits: '123456789012345678', reference: null, requiredConfirmations: 15 });
    const tooPrecise = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ chain: 'bsc', currency: 'USDT', amount: '0.1234567890123456789' }) });
    expect(tooPrecise).toMatchObject({ status: 400, body: { error: 'amount 0.1234567890123456789 has 19 decimal places; this token has 18' } });
  });

  test('a live session paying to an inline merchantWallet registers it (unverified), so the ingesters watch it; sandbox sessions do not', async () => {
    const m = await newMerchant(db.store);
    const other = '0x90F79bf6EB2c4f870365E785982E1f101E93b906';
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ merchantWallet: other }) })).status).toBe(201);
    const wallets = () =>
      db.store.query<{ address: string; verified_at: Date | null }>('SELECT address, verified_at FROM wallets WHERE merchant_id = $1 AND chain = $2', [
        m.id,
        'polygon',
      ]);
    expect((await wallets()).rows).toEqual([]);
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: body({ merchantWallet: other.toLowerCase() }) })).status).toBe(201);
    expect((await call('POST', '/api/v1/sessions', { key: m.live, body: body({ merchantWallet: other }) })).status).toBe(201);
    expect((await wallets()).rows).toEqual([{ address: other, verified_at: null }]);
  });

  test('a webhookUrl on a loopback or private address is refused for live sessions (400, nothing written) and allowed in the sandbox', async () => {
    const m = await newMerchant(db.store);
    const before = await sessionsOf(m.id);
    for (const url of ['http://127.0.0.1:9/hook', 'http://10.0.0.8/hook', 'http://[::1]/hook', 'http://169.254.169.254/latest']) {
      const refused = await call('POST', '/api/v1/sessions', { key: m.live, body: body({ webhookUrl: url }) });
      // The message names the request's field (webhookUrl), not the webhooks API's `url`.
      expect(refused).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^webhookUrl: .*private, loopback or link-local/) } });
    }
    expect(await sessionsOf(m.id)).toBe(before);
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ webhookUrl: 'http://127.0.0.1:9/hook' }) })).status).toBe(201);
  });

  test('a lower-case EVM wallet is stored in EIP-55 form', async () => {
    const m = await newMerchant(db.store);
    const own = '0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65';
    const created = await call('POST', '/api/v1/sessions', { key: m.live, body: body({ merchantWallet: own.toLowerCase() }) });
    expect(created.body.paymentAddress).toBe(own);
  });

  test('live: without merchantWallet the default wallet of the chain is used, else its only verified wallet; unverified wallets do not count', async () => {
    const m = await newMerchant(db.store);
    const { merchantWallet: _omit, ...noWallet } = body();
    const refused = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(refused).toMatchObject({
      status: 400,
      body: {
        error:
          'merchantWallet is required: this merchant has no default wallet on polygon; pass merchantWallet, or choose a default with a live key (POST /wallets/{id}/default, or "default": true when adding the wallet)',
      },
    });
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).status).toBe(400);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator' });
    // Spec §4.2: the only verified wallet of the chain is paid (test/api/soleVerifiedWallet.test.ts).
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).body.merchantWallet).toBe(WALLET);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: '0x90F79bf6EB2c4f870365E785982E1f101E93b906', verifiedBy: 'operator' });
    expect((await call('POST', '/api/v1/payments', { key: m.live, body: noWallet })).status).toBe(400);
    await addWallet(db.store, { merchantId: m.id, chain: 'polygon', address: WALLET, verifiedBy: 'operator', makeDefault: true });
    const created = await call('POST', '/api/v1/payments', { key: m.live, body: noWallet });
    expect(created.status).toBe(201);
    expect(created.body.merchantWallet).toBe(WALLET);
    // Test keys never do: sandbox sessions pay to the merchant's sandbox address.
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: noWallet })).body.merchantWallet).toBe(sandboxWallet('polygon', m.id));
  });

  test('sandbox: a test key with no wallet yet gets a stable sandbox wallet, so a test key alone can try the flow', async () => {
    const m = await newMerchant(db.store);
    const { merchantWallet: _omit, ...noWallet } = body();
    const one = await call('POST', '/api/v1/payments', { key: m.test, body: noWallet });
    const two = await call('POST', '/api/v1/payments', { key: m.test, body: noWallet });
    expect(one.status).toBe(201);
    expect(one.body.merchantWallet).toBe(two.body.merchantWallet);
  });

  test('bridged tokens are accepted only for merchants who opt in', async () => {
    const m = await newMerchant(db.store);
    const plain = await call('POST', '/api/v1/sessions', { key: m.test, body: body() });
    expect(plain.body.tokens.map((token: { symbol: string }) => token.symbol)).toEqual(['USDC']);
    const refused = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ chain: 'base', currency: 'USDT' }) });
    expect(refused).toMatchObject({ status: 400, body: { error: 'USDT on base is only offered as a bridged token, which this merchant has not enabled' } });
    await db.store.query('UPDATE merchants SET accept_bridged_tokens = true WHERE id = $1', [m.id]);
    const bridged = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '26' }) });
    expect(bridged.body.tokens.map((token: { symbol: string }) => token.symbol).sort()).toEqual(['USDC', 'USDC.e']);
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ chain: 'base', currency: 'USDT' }) })).status).toBe(201);
  });
});

import { describe, expect, test } from 'vitest';
import { getBase58Encoder } from '@solana/kit';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { sandboxWallet } from '../../src/internal/sandboxIds.ts';
import { buildApi, createClient, newMerchant, PUBLIC_URL, SOLANA_WALLET, WALLET, useApi } from '../helpers/api.ts';
import { createStore } from '../../src/store/index.ts';

const db = useTestDatabase('api_sessions');
const api = useApi(db);
const { call } = api;

const body = (extra: Record<string, unknown> = {}) => ({ amount: '25', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET, ...extra });

async function countSessions(merchantId: string): Promise<number> {
  const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId]);
  return rows[0]!.n;
}

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
    const before = await countSessions(m.id);
    for (const url of ['http://127.0.0.1:9/hook', 'http://10.0.0.8/hook', 'http://[::1]/hook', 'http://169.254.169.254/latest']) {
      const refused = await call('POST', '/api/v1/sessions', { key: m.live, body: body({ webhookUrl: url }) });
      // The message names the request's field (webhookUrl), not the webhooks API's `url`.
      expect(refused).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^webhookUrl: .*private, loopback or link-local/) } });
    }
    expect(await countSessions(m.id)).toBe(before);
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

describe('unique due amounts', () => {
  test('sessions asking the same amount on one wallet get amount, +1, +2 base units; another currency or wallet starts again', async () => {
    const m = await newMerchant(db.store);
    // A wallet of this test alone (WALLET is verified by another merchant of this file, which a
    // live session of this one may not use).
    const own = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
    const dues = [];
    for (let i = 0; i < 3; i++)
      dues.push((await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', merchantWallet: own }) })).body.amountDueBaseUnits);
    expect(dues).toEqual(['5000000', '5000001', '5000002']);
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', currency: 'USDT', merchantWallet: own }) })).body.amountDueBaseUnits,
    ).toBe('5000000');
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.live, body: body({ amount: '5', merchantWallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' }) })).body
        .amountDueBaseUnits,
    ).toBe('5000000');
    // Sandbox sessions pay to the sandbox address whatever merchantWallet says, so they start again there.
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '5', merchantWallet: own }) })).body.amountDueBaseUnits).toBe('5000000');
    expect(
      (await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '5', merchantWallet: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC' }) })).body
        .amountDueBaseUnits,
    ).toBe('5000001');
  });

  test('concurrent creations never share a due amount', async () => {
    const m = await newMerchant(db.store);
    const answers = await Promise.all(Array.from({ length: 16 }, () => call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '7' }) })));
    expect(answers.every((answer) => answer.status === 201)).toBe(true);
    const dues = answers.map((answer) => BigInt(answer.body.amountDueBaseUnits)).sort((a, b) => (a < b ? -1 : 1));
    expect(dues).toEqual(Array.from({ length: 16 }, (_, i) => 7_000_000n + BigInt(i)));
  });

  test('concurrent creations of neighbouring amounts (less than a cent apart) never share a due amount', async () => {
    const m = await newMerchant(db.store);
    // 6.9999 .. 7.0003 overlap each other's offset ranges across a bucket boundary.
    const amounts = ['6.9999', '7', '7.0001', '6.9999', '7', '7.0001', '7.0002', '6.99995', '7.00005', '7'];
    const answers = await Promise.all(amounts.map((amount) => call('POST', '/api/v1/payments', { key: m.test, body: body({ amount, chain: 'optimism' }) })));
    expect(answers.every((answer) => answer.status === 201)).toBe(true);
    const dues = answers.map((answer) => answer.body.amountDueBaseUnits);
    expect(new Set(dues).size).toBe(amounts.length);
    for (const [i, answer] of answers.entries()) {
      const offset = BigInt(answer.body.amountDueBaseUnits) - BigInt(Math.round(Number(amounts[i]) * 1e6));
      expect(offset >= 0n && offset < 10_000n).toBe(true);
    }
  });

  test('two API processes (each with its own database pool) creating on one wallet at once never share a due amount', async () => {
    const m = await newMerchant(db.store);
    const secondStore = createStore({ connectionString: db.connectionString, max: 5 });
    const secondApi = buildApi(secondStore);
    try {
      await secondApi.ready();
      const second = createClient(secondApi);
      // One price and a neighbour less than a cent above it, sent alternately through both processes.
      const amounts = Array.from({ length: 24 }, (_, i) => (i % 3 === 0 ? '3.0001' : '3'));
      const answers = await Promise.all(
        amounts.map((amount, i) => (i % 2 === 0 ? call : second)('POST', '/api/v1/payments', { key: m.test, body: body({ amount, chain: 'base' }) })),
      );
      expect(answers.map((answer) => answer.status)).toEqual(amounts.map(() => 201));
      const dues = answers.map((answer) => BigInt(answer.body.amountDueBaseUnits));
      expect(new Set(dues).size).toBe(amounts.length);
      for (const [i, due] of dues.entries()) {
        const offset = due - BigInt(Math.round(Number(amounts[i]) * 1e6));
        expect(offset >= 0n && offset < 10_000n).toBe(true);
      }
      // 3.0001 USDC's range is inside 3 USDC's, so 3 USDC may pick above 3.0001's amounts; but
      // 3.0001 USDC's own range holds only amounts taken one above the other: no gap.
      const sorted = (values: bigint[]) => [...values].sort((a, b) => (a < b ? -1 : 1));
      expect(sorted(dues.filter((due) => due >= 3_000_100n))[0]).toBe(3_000_100n);
    } finally {
      await secondApi.close();
      await secondStore.close();
    }
  });

  test('the due amount is one above the highest held; the first free one only once that reaches one cent', async () => {
    const m = await newMerchant(db.store);
    const hold = (offsets: number[]) =>
      db.store.query(
        `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
         SELECT 'ses_hold' || k, $1, false, 'polygon', 'USDC', 6, 7000000, 7000000 + k, 70000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'], $2, 32, now() + interval '1 hour', now() + interval '2 hours'
         FROM unnest($3::int[]) AS k`,
        [m.id, sandboxWallet('polygon', m.id), offsets],
      );
    const create = async () => (await call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '7', chain: 'polygon' }) })).body.amountDueBaseUnits;
    await hold([0, 1, 3]);
    expect(await create()).toBe('7000004');
    await hold([9999]);
    // The top is taken: the gap at 2, then the one at 5 (4 was just taken).
    expect(await create()).toBe('7000002');
    expect(await create()).toBe('7000005');
  });

  test('a reservation whose monitoring window closed frees its due amount', async () => {
    const m = await newMerchant(db.store);
    const first = await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '8' }) });
    await db.store.query(`UPDATE payment_sessions SET expires_at = now() - interval '2 days', monitor_until = now() - interval '1 second' WHERE id = $1`, [
      first.body.id,
    ]);
    expect((await call('POST', '/api/v1/sessions', { key: m.test, body: body({ amount: '8' }) })).body.amountDueBaseUnits).toBe('8000000');
  });

  test('when all offsets below one cent are taken, creation is a 409 that writes nothing', async () => {
    const m = await newMerchant(db.store);
    // 10,000 open reservations for 9 USDC (offsets 0..9999 at 6 decimals).
    await db.store.query(
      `INSERT INTO payment_sessions (id, merchant_id, livemode, chain, currency, decimals, amount, amount_due, fee, token_addresses, pay_to, required_confirmations, expires_at, monitor_until)
       SELECT 'ses_fill' || k, $1, false, 'polygon', 'USDC', 6, 9000000, 9000000 + k, 90000, ARRAY['0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'], $2, 32, now() + interval '1 hour', now() + interval '2 hours'
       FROM generate_series(0, 9999) AS k`,
      [m.id, sandboxWallet('polygon', m.id)],
    );
    const before = await countSessions(m.id);
    const refused = await call('POST', '/api/v1/payments', { key: m.test, body: body({ amount: '9' }) });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/^too many open sessions ask for USDC amount 9000000 base units on polygon/);
    expect(await countSessions(m.id)).toBe(before);
  });
});

describe('validation: a 400 that says what is wrong, and writes nothing', () => {
  const cases: [string, unknown, string | RegExp][] = [
    ['missing amount', { currency: 'USDC', chain: 'polygon', merchantWallet: WALLET }, 'amount or price is required'],
    ['amount as a JSON number', body({ amount: 25 }), 'amount must be a string'],
    ['negative amount', body({ amount: '-1' }), 'amount must be decimal text such as "12.50" (digits, one optional point, no sign or exponent)'],
    ['zero amount', body({ amount: '0' }), 'amount must be a positive number'],
    ['exponent', body({ amount: '1e3' }), /^amount must be decimal text/],
    ['too many decimals', body({ amount: '1.0000001' }), 'amount 1.0000001 has 7 decimal places; this token has 6'],
    ['below the minimum', body({ amount: '0.001' }), 'amount 0.001 is below the minimum of 0.01'],
    ['above the maximum', body({ amount: '1000000.01' }), 'amount 1000000.01 is above the maximum of 1000000'],
    ['unknown currency', body({ currency: 'DAI' }), 'currency must be one of USDT, USDC'],
    ['unknown chain', body({ chain: 'ethereum' }), 'chain must be one of polygon, solana, base, bsc, arbitrum, optimism'],
    [
      'bad EIP-55 checksum',
      body({ merchantWallet: '0x70997970c51812DC3A010C7d01b50e0d17dc79C8' }),
      /^merchantWallet "0x70997970c51812DC3A010C7d01b50e0d17dc79C8" is not a valid polygon address/,
    ],
    ['EVM wallet on solana', body({ chain: 'solana', merchantWallet: WALLET }), /is not a valid solana address \(base58 of a 32-byte key\)$/],
    ['relative webhookUrl', body({ webhookUrl: '/hook' }), 'webhookUrl must be an absolute http or https URL'],
    ['ftp successUrl', body({ successUrl: 'ftp://shop.example/ok' }), 'successUrl must be an absolute http or https URL'],
    ['metadata value not a string', body({ metadata: { n: 1 } }), 'metadata.n must be a string'],
    [
      'metadata with 51 keys',
      body({ metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }),
      'metadata must have at most 50 keys',
    ],
    ['metadata key too long', body({ metadata: { ['k'.repeat(41)]: 'v' } }), `metadata key "${'k'.repeat(41)}" must be at most 40 characters`],
    ['metadata value too long', body({ metadata: { k: 'v'.repeat(501) } }), 'metadata.k must be at most 500 characters'],
    ['expiresIn too short', body({ expiresIn: 59 }), 'expiresIn must be at least 60'],
    ['expiresIn too long', body({ expiresIn: 604801 }), 'expiresIn must be at most 604800'],
    ['expiresIn not an integer', body({ expiresIn: 60.5 }), 'expiresIn must be an integer'],
    ['unknown field', body({ colour: 'red' }), 'unknown field "colour"'],
    ['body is an array', [body()], 'the request body must be a JSON object'],
    ['NUL in metadata', body({ metadata: { note: 'a\u0000b' } }), 'body.metadata.note contains a NUL character (U+0000), which is not accepted'],
  ];
  test.each(cases)('%s', async (_name, payload, message) => {
    const m = await newMerchant(db.store);
    for (const url of ['/api/v1/sessions', '/v1/payments']) {
      const answer = await call('POST', url, { key: m.test, body: payload });
      expect(answer.status).toBe(400);
      if (typeof message === 'string') expect(answer.body).toEqual({ error: message });
      else expect(answer.body.error).toMatch(message);
    }
    expect(await countSessions(m.id)).toBe(0);
  });

  test('malformed JSON, a wrong content type, an empty body and an oversized body are 400s', async () => {
    const m = await newMerchant(db.store);
    const send = (payload: string, contentType: string) =>
      api.app.inject({ method: 'POST', url: '/api/v1/sessions', headers: { authorization: `Bearer ${m.test}`, 'content-type': contentType }, payload });
    const malformed = await send('{"amount": "1",', 'application/json');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toMatch(/JSON/);
    const form = await send('amount=1', 'application/x-www-form-urlencoded');
    expect(form.statusCode).toBe(400);
    expect(form.json()).toEqual({
      error: 'Content-Type "application/x-www-form-urlencoded" is not accepted: send a JSON body with Content-Type: application/json',
    });
    expect((await send('hello', 'text/plain')).statusCode).toBe(400);
    expect((await send('', 'application/json')).statusCode).toBe(400);
    const huge = await send(JSON.stringify(body({ metadata: { k: 'x'.repeat(70_000) } })), 'application/json');
    expect(huge.statusCode).toBe(400);
    expect(huge.json()).toEqual({ error: 'request body is larger than 65536 bytes' });
    const proto = await send('{"__proto__": {"x": 1}, "amount": "1", "currency": "USDC", "chain": "polygon"}', 'application/json');
    expect(proto.statusCode).toBe(400);
    expect(await countSessions(m.id)).toBe(0);
  });

  test('unknown session ids and malformed ids are both 404 (they name no session; every route in unknownIds.test.ts)', async () => {
    const m = await newMerchant(db.store);
    expect((await call('GET', '/api/v1/sessions/ses_doesnotexist000000', { key: m.test })).status).toBe(404);
    expect((await call('GET', `/api/v1/payments/${'x'.repeat(65)}`, { key: m.test })).status).toBe(404);
  });
});

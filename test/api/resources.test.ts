import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { MAX_OPEN_SESSIONS_PER_LINK } from '../../src/payments/links.ts';
import { buildApi, createClient, EVERY_CHAIN_LIVE, newMerchant, payer, PUBLIC_URL, SOLANA_WALLET, WALLET } from '../helpers/api.ts';
import { createOpenApiChecker, type OpenApiChecker } from '../helpers/openapiCheck.ts';

const db = useTestDatabase('api_resources');
let app: ReturnType<typeof buildApi>;
let call: ReturnType<typeof createClient>;
let checker: OpenApiChecker;

beforeAll(async () => {
  app = buildApi(db.store);
  await app.ready();
  checker = await createOpenApiChecker(app);
  call = createClient(app, checker);
});
afterAll(() => app.close());

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

describe('payment links', () => {
  test('create, read, list; each visit to the public URL creates a fresh session and redirects (303) to its checkout page', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '10.5', metadata: { sku: 'tee' }, expiresIn: 900 }) });
    expect(link.status).toBe(201);
    expect(link.body).toMatchObject({
      active: true,
      amount: '10.5',
      currency: 'USDC',
      chain: 'base',
      merchantWallet: WALLET,
      expiresIn: 900,
      sessionsCreated: 0,
      livemode: false,
    });
    expect(link.body.url).toBe(`${PUBLIC_URL}/pay/${link.body.id}`);
    expect((await call('GET', `/api/v1/payment-links/${link.body.id}`, { key: m.test })).body).toEqual(link.body);

    const visits = [];
    for (let i = 0; i < 2; i++) visits.push(await app.inject({ method: 'GET', url: `/pay/${link.body.id}` }));
    const sessionIds = visits.map((visit) => {
      expect(visit.statusCode).toBe(303);
      return /\/checkout\/(ses_\w+)$/.exec(String(visit.headers.location))![1]!;
    });
    expect(new Set(sessionIds).size).toBe(2);
    const session = await call('GET', `/api/v1/payments/${sessionIds[1]}`, { key: m.test });
    expect(session.body).toMatchObject({
      status: 'pending',
      amount: '10.5',
      metadata: { sku: 'tee' },
      paymentLinkId: link.body.id,
      amountDueBaseUnits: '10500001',
    });
    expect(new Date(session.body.expiresAt).getTime() - new Date(session.body.createdAt).getTime()).toBe(900_000);
    expect((await call('GET', '/api/v1/payment-links', { key: m.test })).body).toMatchObject({
      data: [{ id: link.body.id, sessionsCreated: 2 }],
      hasMore: false,
    });
  });

  test('a link has at most MAX_OPEN_SESSIONS_PER_LINK unpaid sessions open: anonymous visits cannot use up its price', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '3' }) });
    // Open sessions as visits would, then one more visit: 429 with Retry-After, nothing created.
    for (let i = 0; i < MAX_OPEN_SESSIONS_PER_LINK; i++) {
      expect((await app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
    }
    const refused = await app.inject({ method: 'GET', url: `/pay/${link.body.id}` });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    const count = async () =>
      (await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1', [link.body.id])).rows[0]!.n;
    expect(await count()).toBe(MAX_OPEN_SESSIONS_PER_LINK);
    // The merchant's own API sessions at that price still get due amounts.
    expect((await call('POST', '/api/v1/payments', { key: m.test, body: payment({ amount: '3' }) })).status).toBe(201);
    // When one expires, a visitor gets a session again.
    await db.store.query(
      `UPDATE payment_sessions SET expires_at = now() - interval '1 second' WHERE id = (SELECT id FROM payment_sessions WHERE payment_link_id = $1 LIMIT 1)`,
      [link.body.id],
    );
    expect((await app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
  });

  test('deactivated links answer 410 and create nothing; reactivation works; unknown links are 404', async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment() });
    const off = await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: false } });
    expect(off.body.active).toBe(false);
    const gone = await app.inject({ method: 'GET', url: `/pay/${link.body.id}` });
    expect(gone.statusCode).toBe(410);
    expect(gone.json()).toEqual({ error: 'this payment link is no longer active' });
    expect((await call('GET', '/api/v1/payment-links?active=false', { key: m.test })).body.data.length).toBe(1);
    expect((await call('GET', '/api/v1/payment-links?active=true', { key: m.test })).body.data.length).toBe(0);
    await call('PATCH', `/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: true } });
    expect((await app.inject({ method: 'GET', url: `/pay/${link.body.id}` })).statusCode).toBe(303);
    expect((await app.inject({ method: 'GET', url: '/pay/plink_unknown' })).statusCode).toBe(404);
    const { rows } = await db.store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE payment_link_id = $1', [link.body.id]);
    expect(rows[0]!.n).toBe(1);
  });

  test("a customer's browser gets a page, not JSON, when a link cannot start a checkout", async () => {
    const m = await newMerchant(db.store);
    const link = await call('POST', '/api/v1/payment-links', { key: m.test, body: payment() });
    await call('PATCH', `/api/v1/payment-links/${link.body.id}`, { key: m.test, body: { active: false } });
    const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    const gone = await app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: browser });
    expect(gone.statusCode).toBe(410);
    expect(gone.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(gone.body).toContain('<h1>Payment link no longer active</h1>');
    // The checkout's headers: strict CSP, no framing, no caching.
    expect(gone.headers).toMatchObject({
      'x-frame-options': 'DENY',
      'cache-control': 'no-store',
      'content-security-policy': expect.stringContaining("default-src 'none'"),
    });
    const unknown = await app.inject({ method: 'GET', url: '/pay/plink_unknown', headers: browser });
    expect([unknown.statusCode, unknown.body.includes('<h1>Payment link not found</h1>')]).toEqual([404, true]);
    // API clients (JSON, or no Accept at all) keep the JSON error.
    expect((await app.inject({ method: 'GET', url: `/pay/${link.body.id}`, headers: { accept: 'application/json' } })).json()).toEqual({
      error: 'this payment link is no longer active',
    });
  });
  test('link creation validates like a payment', async () => {
    const m = await newMerchant(db.store);
    expect(await call('POST', '/api/v1/payment-links', { key: m.test, body: payment({ amount: '1.1234567' }) })).toMatchObject({
      status: 400,
      body: { error: 'amount 1.1234567 has 7 decimal places; this token has 6' },
    });
    const { merchantWallet: _w, ...noWallet } = payment();
    expect(await call('POST', '/api/v1/payment-links', { key: m.live, body: noWallet })).toMatchObject({
      status: 400,
      body: {
        error: expect.stringMatching(/^merchantWallet is required: this merchant has no default wallet on base; pass merchantWallet, or choose a default/),
      },
    });
    expect(await call('PATCH', '/api/v1/payment-links/plink_x', { key: m.test, body: { active: 'no' } })).toMatchObject({
      status: 400,
      body: { error: 'active must be a boolean' },
    });
  });
});

async function receivedPayment(key: string, amount: string, received: bigint) {
  const created = await call('POST', '/api/v1/payments', { key, body: payment({ amount }) });
  // As the engine leaves a payment whose money is all confirmed (refundsConfirmedMoney.test.ts drives the engine).
  await db.store.query(
    `UPDATE payment_sessions SET status = 'confirmed', amount_received = $2::numeric, amount_confirmed = $2::numeric, tx_hash = $3 WHERE id = $1`,
    [created.body.id, received.toString(), `0x${'ab'.repeat(32)}`],
  );
  await db.store.query(
    `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, token_address, from_address, to_address, amount, session_id, match_method)
     VALUES (false, 'base', $1, 0, 100, '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', $2, $3, $4::numeric, $5, 'amount')`,
    [`0x${'ab'.repeat(32)}${created.body.id}`, payer.address.toLowerCase(), WALLET, received.toString(), created.body.id],
  );
  return created.body.id as string;
}

describe('refunds', () => {
  test('request (to the payer by default), complete with the tx hash, reject; events written in the same transaction', async () => {
    const m = await newMerchant(db.store);
    const paymentId = await receivedPayment(m.test, '10', 10_000_000n);
    const first = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '4', reason: 'damaged' } });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      paymentId,
      amount: '4',
      amountBaseUnits: '4000000',
      status: 'requested',
      address: payer.address,
      reason: 'damaged',
      txHash: null,
    });
    const second = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, address: WALLET.toLowerCase() } });
    expect(second.body).toMatchObject({ amount: '6', address: WALLET });
    expect(await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '0.01' } })).toMatchObject({
      status: 400,
      body: { error: `payment ${paymentId} has nothing left to refund (received 10, all of it already refunded or requested)` },
    });

    const hash = `0x${'CD'.repeat(32)}`;
    expect(await call('POST', `/api/v1/refunds/${first.body.id}/complete`, { key: m.test, body: { txHash: 'nope' } })).toMatchObject({
      status: 400,
      body: { error: 'txHash must be 0x followed by 64 hex digits' },
    });
    const completed = await call('POST', `/api/v1/refunds/${first.body.id}/complete`, { key: m.test, body: { txHash: hash } });
    expect(completed.body).toMatchObject({ status: 'completed', txHash: hash.toLowerCase() });
    expect(await call('POST', `/api/v1/refunds/${first.body.id}/reject`, { key: m.test })).toMatchObject({
      status: 409,
      body: { error: `refund ${first.body.id} is already completed` },
    });
    const rejected = await call('POST', `/api/v1/refunds/${second.body.id}/reject`, { key: m.test, body: { reason: 'outside policy' } });
    expect(rejected.body).toMatchObject({ status: 'rejected', rejectionReason: 'outside policy' });
    // The rejected 6 are refundable again, and no more.
    expect(await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '6.000001' } })).toMatchObject({
      status: 400,
      body: { error: 'amount 6.000001 exceeds what can still be refunded: 6 USDC' },
    });

    const { rows } = await db.store.query<{ type: string; refund_id: string; session_id: string }>(
      'SELECT type, refund_id, session_id FROM events WHERE session_id = $1 ORDER BY seq',
      [paymentId],
    );
    expect(rows).toEqual([
      { type: 'refund.requested', refund_id: first.body.id, session_id: paymentId },
      { type: 'refund.requested', refund_id: second.body.id, session_id: paymentId },
      { type: 'refund.completed', refund_id: first.body.id, session_id: paymentId },
      { type: 'refund.rejected', refund_id: second.body.id, session_id: paymentId },
    ]);
    expect((await call('GET', `/api/v1/refunds/${first.body.id}`, { key: m.test })).body).toEqual(completed.body);
    expect((await call('GET', `/api/v1/refunds?paymentId=${paymentId}`, { key: m.test })).body.data.map((r: { id: string }) => r.id)).toEqual([
      second.body.id,
      first.body.id,
    ]);
  });

  test('concurrent refund requests never exceed what was received', async () => {
    const m = await newMerchant(db.store);
    const paymentId = await receivedPayment(m.test, '10', 10_000_000n);
    const answers = await Promise.all(Array.from({ length: 8 }, () => call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '3' } })));
    expect(answers.filter((answer) => answer.status === 201).length).toBe(3);
    expect(answers.filter((answer) => answer.status === 400).length).toBe(5);
  });

  test('no refund of unconfirmed money; a refund whose money a reorg took away cannot be completed; sub-cent amounts are fine', async () => {
    const m = await newMerchant(db.store);
    const paymentId = await receivedPayment(m.test, '10', 10_000_000n);
    await db.store.query(`UPDATE payment_sessions SET status = 'confirming' WHERE id = $1`, [paymentId]);
    expect((await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '1' } })).status).toBe(409);
    await db.store.query(`UPDATE payment_sessions SET status = 'confirmed' WHERE id = $1`, [paymentId]);
    const small = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '0.005' } });
    expect(small).toMatchObject({ status: 201, body: { amount: '0.005' } });
    const refund = await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId, amount: '9' } });
    expect(refund.status).toBe(201);
    // A deep reorg removes the payment after the request: completing would send money never kept.
    await db.store.query(`UPDATE payment_sessions SET status = 'created', amount_received = 0, amount_confirmed = 0 WHERE id = $1`, [paymentId]);
    const completed = await call('POST', `/api/v1/refunds/${refund.body.id}/complete`, { key: m.test, body: { txHash: `0x${'cd'.repeat(32)}` } });
    expect(completed.status).toBe(409);
    expect((await call('GET', `/api/v1/refunds/${refund.body.id}`, { key: m.test })).body.status).toBe('requested');
  });

  test('nothing received, unknown payment, bad address', async () => {
    const m = await newMerchant(db.store);
    const open = await call('POST', '/api/v1/payments', { key: m.test, body: payment() });
    expect(await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: open.body.id, address: WALLET } })).toMatchObject({
      status: 409,
      body: {
        error: `payment ${open.body.id} has no confirmed money to refund: refunds are possible once money it received is confirmed (a confirmed, settled or underpaid payment)`,
      },
    });
    // Interface B shows the same payment as `pending`; the message names no state either interface could misread.
    expect((await call('GET', `/v1/payments/${open.body.id}`, { key: m.test })).body.status).toBe('pending');
    expect((await call('POST', '/v1/refunds', { key: m.test, body: { paymentId: open.body.id, address: WALLET } })).body.error).not.toMatch(/created|pending/);
    expect(await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: 'ses_nope', address: WALLET } })).toMatchObject({ status: 404 });
    const paid = await receivedPayment(m.test, '11', 11_000_000n);
    expect(await call('POST', '/api/v1/refunds', { key: m.test, body: { paymentId: paid, address: SOLANA_WALLET } })).toMatchObject({
      status: 400,
      body: { error: `address "${SOLANA_WALLET}" is not a valid base address` },
    });
    expect((await call('GET', '/api/v1/refunds/rfd_nope', { key: m.test })).status).toBe(404);
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

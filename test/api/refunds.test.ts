import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { useApi, newMerchant, payer, SOLANA_WALLET, WALLET } from '../helpers/api.ts';

/**
 * Refunds over the API: request, complete and reject with their events, concurrency, unconfirmed
 * or reorged money, and the refusals.
 */
const db = useTestDatabase('api_refunds');
const api = useApi(db);
const { call } = api;

const payment = (extra: Record<string, unknown> = {}) => ({ amount: '10', currency: 'USDC', chain: 'base', merchantWallet: WALLET, ...extra });

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

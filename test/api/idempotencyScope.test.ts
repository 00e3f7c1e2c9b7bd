import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { EVERY_CHAIN_LIVE, newMerchant, WALLET, useApi } from '../helpers/api.ts';

/** Idempotency keys belong to the account and mode (Stripe's scope), not to one API key. */
const db = useTestDatabase('api_idempotency_scope');
const { call } = useApi(db, { env: EVERY_CHAIN_LIVE, checked: false });

const payment = { amount: '7.00', currency: 'USDC', chain: 'polygon', merchantWallet: WALLET };
const count = async (merchantId: string) =>
  Number((await db.store.query<{ n: bigint }>('SELECT count(*) AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId])).rows[0]!.n);

describe('Idempotency-Key scope', () => {
  test('a retry with another key of the same account and mode replays the first answer: one payment, not two', async () => {
    const m = await newMerchant(db.store);
    const secondTestKey = await m.key(false);
    const first = await call('POST', '/v1/payments', { key: m.test, as: 'x-api-key', body: payment, headers: { 'idempotency-key': 'order-1' } });
    expect(first.status).toBe(201);
    const retry = await call('POST', '/v1/payments', { key: secondTestKey, as: 'x-api-key', body: payment, headers: { 'idempotency-key': 'order-1' } });
    expect(retry).toMatchObject({ status: 201, body: { id: first.body.id }, headers: { 'idempotent-replayed': 'true' } });
    // The sk_ style key of the same account too; a different body under the key is still a 422.
    expect((await call('POST', '/v1/payments', { key: m.sk, as: 'x-api-key', body: payment, headers: { 'idempotency-key': 'order-1' } })).body.id).toBe(
      first.body.id,
    );
    expect(
      (
        await call('POST', '/v1/payments', {
          key: secondTestKey,
          as: 'x-api-key',
          body: { ...payment, amount: '8' },
          headers: { 'idempotency-key': 'order-1' },
        })
      ).status,
    ).toBe(422);
    expect(await count(m.id)).toBe(1);
  });

  test('test and live keys of one merchant, and other merchants, never share a key', async () => {
    const m = await newMerchant(db.store);
    const other = await newMerchant(db.store, 'Other');
    const headers = { 'idempotency-key': 'order-2' };
    const sandbox = await call('POST', '/v1/payments', { key: m.test, as: 'x-api-key', body: payment, headers });
    const live = await call('POST', '/v1/payments', { key: m.live, as: 'x-api-key', body: payment, headers });
    const elsewhere = await call('POST', '/v1/payments', { key: other.test, as: 'x-api-key', body: payment, headers });
    for (const answer of [sandbox, live, elsewhere]) expect(answer).toMatchObject({ status: 201, headers: { 'idempotent-replayed': 'false' } });
    expect(new Set([sandbox.body.id, live.body.id, elsewhere.body.id]).size).toBe(3);
    expect(await count(m.id)).toBe(2);
  });
});

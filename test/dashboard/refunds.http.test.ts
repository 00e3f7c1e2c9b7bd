import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { useTestDatabase } from '../helpers/db.ts';
import { buildApi } from '../helpers/api.ts';
import { useScriptedChainRpc } from '../helpers/chainRpc.ts';
import { addUserWithPassword, newMerchantWithOwner, signedInClient } from '../helpers/dashboard.ts';
import { confirmedPaymentWithRefund } from '../helpers/dashboardMoney.ts';
import { setHead, usdc } from '../helpers/engine.ts';

/**
 * The Refunds pages over HTTP (the browser flows are in refunds.browser.test.ts): roles, other
 * merchants' ids, the state filter, and completion through the same verified domain function as
 * the API, against a scripted chain RPC.
 */
const db = useTestDatabase('dashboard_refunds');
const chain = useScriptedChainRpc();
let app: FastifyInstance;
beforeAll(async () => {
  app = buildApi(db.store, { lookups: chain.lookups });
  await app.ready();
  await setHead(db.store, { head: 10_000n });
});
afterAll(() => app?.close());

const refundRow = async (id: string) =>
  (await db.store.query<{ status: string; tx_hash: string | null }>('SELECT status, tx_hash FROM refunds WHERE id = $1', [id])).rows[0]!;

async function liveClient(email: string) {
  const client = await signedInClient(app, email);
  expect((await client.post('/dashboard/mode', { livemode: 'true' })).status).toBe(303);
  return client;
}

describe('refunds pages', () => {
  test('a viewer and a developer see refunds but cannot reject or complete one, even with a valid CSRF token', async () => {
    const { merchantId } = await newMerchantWithOwner(db.store);
    const { refund } = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: false });
    for (const role of ['viewer', 'developer'] as const) {
      const user = await addUserWithPassword(db.store, { merchantId, role });
      const client = await signedInClient(app, user.email);
      const list = await client.get('/dashboard/refunds');
      expect(list.status).toBe(200);
      expect(list.body).toContain(refund.id);
      const detail = await client.get(`/dashboard/refunds/${refund.id}`);
      expect(detail.body).not.toContain('Complete the refund');
      expect((await client.post(`/dashboard/refunds/${refund.id}/reject`, { reason: 'no' })).status).toBe(403);
      expect((await client.post(`/dashboard/refunds/${refund.id}/complete`, { simulate: '1' })).status).toBe(403);
    }
    expect(await refundRow(refund.id)).toEqual({ status: 'requested', tx_hash: null });
  });

  test("another merchant's refund answers not found, to read and to act on", async () => {
    const mine = await newMerchantWithOwner(db.store);
    const theirs = await newMerchantWithOwner(db.store);
    const { refund } = await confirmedPaymentWithRefund(db.store, { merchantId: theirs.merchantId, livemode: false });
    const client = await signedInClient(app, mine.owner.email);
    expect((await client.get(`/dashboard/refunds/${refund.id}`)).status).toBe(404);
    expect((await client.post(`/dashboard/refunds/${refund.id}/reject`, {})).status).toBe(404);
    expect((await client.post(`/dashboard/refunds/${refund.id}/complete`, { txHash: `0x${'ab'.repeat(32)}` })).status).toBe(404);
    expect((await client.get('/dashboard/refunds')).body).not.toContain(refund.id);
    expect(await refundRow(refund.id)).toEqual({ status: 'requested', tx_hash: null });
  });

  test('test mode: the list filters by state; a malformed hash shows the API message; a simulated transaction completes; reject is audited', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const first = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: false });
    const second = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: false });
    const client = await signedInClient(app, owner.email);
    const bad = await client.post(`/dashboard/refunds/${first.refund.id}/complete`, { txHash: 'nope' });
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('txHash must be 0x followed by 64 hex digits');
    expect(await refundRow(first.refund.id)).toEqual({ status: 'requested', tx_hash: null });

    const done = await client.post(`/dashboard/refunds/${first.refund.id}/complete`, { simulate: '1' });
    expect(done).toMatchObject({ status: 303, headers: { location: `/dashboard/refunds/${first.refund.id}?done=completed` } });
    expect((await refundRow(first.refund.id)).status).toBe('completed');
    expect((await client.post(`/dashboard/refunds/${second.refund.id}/reject`, { reason: 'not eligible' })).status).toBe(303);

    const completed = await client.get('/dashboard/refunds?status=completed');
    expect(completed.body).toContain(first.refund.id);
    expect(completed.body).not.toContain(second.refund.id);
    const rejected = await client.get('/dashboard/refunds?status=rejected');
    expect(rejected.body).toContain(second.refund.id);
    expect(rejected.body).not.toContain(first.refund.id);
    const { rows } = await db.store.query('SELECT action, target FROM audit_log WHERE merchant_id = $1 AND action LIKE $2 ORDER BY id', [
      merchantId,
      'refund.%',
    ]);
    expect(rows).toEqual([
      { action: 'refund.completed', target: first.refund.id },
      { action: 'refund.rejected', target: second.refund.id },
    ]);
  });

  test('live: a transaction paying the wrong amount is refused with what it pays; the right one completes the refund', async () => {
    const { merchantId, owner } = await newMerchantWithOwner(db.store);
    const { session, refund } = await confirmedPaymentWithRefund(db.store, { merchantId, livemode: true });
    const client = await liveClient(owner.email);
    const page = await client.get(`/dashboard/refunds/${refund.id}`);
    expect(page.body).toContain(`ethereum:${usdc()}@137/transfer?address=${refund.toAddress}&amp;uint256=5000000`);

    const wrong = `0x${'e1'.repeat(32)}`;
    chain.rpc.addTransaction(wrong, [{ token: usdc(), from: session.payTo, to: refund.toAddress, amount: 4_000_000n }]);
    const refused = await client.post(`/dashboard/refunds/${refund.id}/complete`, { txHash: wrong });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain(
      `transaction ${wrong} does not pay this refund: it must transfer exactly 5 USDC (5000000 base units) from the payment&#39;s receiving wallet ${session.payTo} to ${refund.toAddress}; it transfers 4 USDC from ${session.payTo} to ${refund.toAddress}`,
    );
    expect(await refundRow(refund.id)).toEqual({ status: 'requested', tx_hash: null });

    const right = `0x${'e2'.repeat(32)}`;
    chain.rpc.addTransaction(right, [{ token: usdc(), from: session.payTo, to: refund.toAddress, amount: 5_000_000n }]);
    expect((await client.post(`/dashboard/refunds/${refund.id}/complete`, { txHash: right })).status).toBe(303);
    expect(await refundRow(refund.id)).toEqual({ status: 'completed', tx_hash: right });
  });
});

import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { useScriptedChainRpc } from '../helpers/chainRpc.ts';
import { confirmedPaymentWithRefund, newCustomerAddress } from '../helpers/dashboardMoney.ts';
import { setHead, usdc } from '../helpers/engine.ts';

/**
 * `POST /refunds/{id}/complete` verifies the refund's transaction on chain (a scripted RPC serves
 * the transactions; the anvil tests use a real chain): failed and unknown transactions, one
 * transfer completing one refund, a batch completing two, and the sandbox's hash used once.
 */
const db = useTestDatabase('api_refunds_verified');
const chain = useScriptedChainRpc();
const api = useApi(db, { lookups: chain.lookups });
const complete = (key: string, id: string, txHash: string) => api.call('POST', `/api/v1/refunds/${id}/complete`, { key, body: { txHash } });
let hashes = 0;
const nextHash = () => `0x${(++hashes).toString(16).padStart(64, 'a')}`;

describe('completing a live refund', () => {
  test('a failed transaction is 400, an unknown one 409 (try again), and neither changes the refund', async () => {
    await setHead(db.store, { head: 10_000n });
    const m = await newMerchant(db.store);
    const { session, refund } = await confirmedPaymentWithRefund(db.store, { merchantId: m.id, livemode: true });
    const failed = nextHash();
    chain.rpc.addTransaction(failed, [{ token: usdc(), from: session.payTo, to: refund.toAddress, amount: refund.amount }], { failed: true });
    expect(await complete(m.live, refund.id, failed)).toMatchObject({
      status: 400,
      body: { error: `transaction ${failed} failed on polygon (reverted): it moved no tokens, so it cannot complete the refund` },
    });
    const unknown = nextHash();
    expect(await complete(m.live, refund.id, unknown)).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining(`transaction ${unknown} was not found on polygon`) },
    });
    const other = nextHash();
    chain.rpc.addTransaction(other, [{ token: usdc(), from: newCustomerAddress(), to: refund.toAddress, amount: refund.amount }]);
    expect((await complete(m.live, refund.id, other)).body.error).toContain("from the payment's receiving wallet");
    expect((await api.call('GET', `/api/v1/refunds/${refund.id}`, { key: m.live })).body).toMatchObject({ status: 'requested', txHash: null });
  });

  test('one transfer completes one refund; a transaction with two such transfers completes two', async () => {
    await setHead(db.store, { head: 10_000n });
    const m = await newMerchant(db.store);
    const wallet = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
    const customer = newCustomerAddress();
    const refunds = [];
    for (let i = 0; i < 3; i++) refunds.push(await confirmedPaymentWithRefund(db.store, { merchantId: m.id, livemode: true, wallet, address: customer }));
    const transfer = { token: usdc(), from: refunds[0]!.session.payTo, to: customer, amount: 5_000_000n };
    const single = nextHash();
    chain.rpc.addTransaction(single, [transfer]);
    expect((await complete(m.live, refunds[0]!.refund.id, single)).status).toBe(200);
    expect(await complete(m.live, refunds[1]!.refund.id, single)).toMatchObject({
      status: 409,
      body: { error: `transaction ${single} already completed another refund of 5 USDC to ${customer}: one transfer completes one refund` },
    });
    const batch = nextHash();
    chain.rpc.addTransaction(batch, [transfer, transfer]);
    expect((await complete(m.live, refunds[1]!.refund.id, batch)).status).toBe(200);
    expect((await complete(m.live, refunds[2]!.refund.id, batch)).status).toBe(200);
  });

  test('sandbox: a well-formed hash completes a refund unverified, once', async () => {
    const m = await newMerchant(db.store);
    const first = await confirmedPaymentWithRefund(db.store, { merchantId: m.id, livemode: false });
    const second = await confirmedPaymentWithRefund(db.store, { merchantId: m.id, livemode: false });
    const hash = nextHash();
    expect(await complete(m.test, first.refund.id, hash)).toMatchObject({ status: 200, body: { status: 'completed', txHash: hash } });
    expect(await complete(m.test, second.refund.id, hash)).toMatchObject({
      status: 409,
      body: { error: `transaction ${hash} already completed another refund: a hash completes one refund` },
    });
  });
});

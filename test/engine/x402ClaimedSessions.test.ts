import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { claimTransaction } from '../../src/engine/index.ts';
import { insertTransfer, newEvmWallet, newMerchant, newSession, nextBlockBase, quietEngine, setHead, statusOf } from '../helpers/engine.ts';

/*
 * A facilitator settlement's session (x402 `/settle`, src/x402/facilitator.ts) is in amount mode
 * with its due amount set to the authorized value exactly, not a unique one, and its relayer
 * transaction is claimed for it (source `x402`) before the broadcast. Once claimed it is paid by
 * that claim only: it is no amount candidate for other transfers (a review found it was).
 */
const db = useTestDatabase('engine_x402_claimed');
const engine = () => quietEngine(db.store);
const nextBase = () => nextBlockBase(db.store);
const chain = 'polygon' as const;
const livemode = true;

/** A session as createFacilitatorSession leaves it: created in amount mode, then its due amount set to the amount. */
async function facilitatorSession(merchantId: string, wallet: string, amount: string) {
  const session = await newSession(db.store, { merchantId, wallet, amount, metadata: { source: 'x402-facilitator' } });
  await db.store.query('UPDATE payment_sessions SET amount_due = amount WHERE id = $1', [session.id]);
  return session;
}

const claimX402 = (sessionId: string, txHash: string) => db.store.transaction((sql) => claimTransaction(sql, { sessionId, chain, txHash, source: 'x402' }));

async function transferOf(txHash: string) {
  const { rows } = await db.store.query('SELECT session_id, match_method FROM transfers WHERE tx_hash = $1', [txHash]);
  return rows[0] as { session_id: string | null; match_method: string | null };
}

describe("a facilitator settlement's session with its transaction claimed", () => {
  test("beside a customer's session of the same due amount: the customer's payments pay the customer, the relayer's its own session", async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    // The customer's session holds 10.000000 (the first at that price); the settlement's session
    // gets the same 10.000000 as its authorized value.
    const customer = await newSession(db.store, { merchantId, wallet, amount: '10' });
    expect(customer.amountDue).toBe(10_000_000n);
    const settlement = await facilitatorSession(merchantId, wallet, '10');
    const base = await nextBase();
    const relayerTx = `0x${'7a'.repeat(32)}`;
    await claimX402(settlement.id, relayerTx);

    const paid = await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(paid.txHash)).toEqual({ session_id: customer.id, match_method: 'amount' });
    // The same sum again (the customer paying twice): matching's usual rule gives it to the
    // customer's session (overpaid, refundable); the settlement's session took it by amount, to
    // be overpaid by its own relayer transfer later.
    const again = await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 1n });
    await setHead(db.store, { head: base + 1n });
    await e.reconcile({ chain, livemode });
    expect((await transferOf(again.txHash)).session_id).not.toBe(settlement.id);

    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 2n, txHash: relayerTx });
    await setHead(db.store, { head: base + 40n });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(relayerTx)).toEqual({ session_id: settlement.id, match_method: 'claim' });
    expect(await statusOf(db.store, customer.id)).toMatchObject({ status: 'confirmed' });
    expect(await statusOf(db.store, settlement.id)).toMatchObject({ status: 'confirmed', amount_received: '10000000' });
  });

  test("takes no stranger's transfer of its amount, even as the only session waiting on the wallet", async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const settlement = await facilitatorSession(merchantId, wallet, '0.25');
    await claimX402(settlement.id, `0x${'7b'.repeat(32)}`);
    const base = await nextBase();
    const stranger = await insertTransfer(db.store, { to: wallet, amount: 250_000n, block: base });
    await setHead(db.store, { head: base + 40n });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(stranger.txHash)).toEqual({ session_id: null, match_method: null });
    expect(await statusOf(db.store, settlement.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test('before its claim is written it is matched as any amount-mode session (the fallback when a claim is refused)', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const settlement = await facilitatorSession(merchantId, wallet, '0.5');
    const base = await nextBase();
    const transfer = await insertTransfer(db.store, { to: wallet, amount: 500_000n, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await transferOf(transfer.txHash)).toEqual({ session_id: settlement.id, match_method: 'amount' });
  });
});

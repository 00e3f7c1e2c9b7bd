import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { getBase58Decoder } from '@solana/kit';
import { useTestDatabase } from '../helpers/db.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { eventsOf, insertTransfer, newMerchant, newSession, setHead, statusOf } from '../helpers/engine.ts';

const db = useTestDatabase('engine_solana');
const engine = () => createEngine({ store: db.store, logger: pino({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });
const chain = 'solana' as const;
const USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const solanaAddress = () => getBase58Decoder().decode(randomBytes(32));
const signature = () => getBase58Decoder().decode(randomBytes(64));

describe('solana: Solana Pay reference matching and finalized-only confirmation', () => {
  test('the reference key wins over the amount, and confirmed and settled wait for the finalized slot', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = solanaAddress();
    const first = await newSession(db.store, { merchantId, wallet, amount: '5', chain });
    const second = await newSession(db.store, { merchantId, wallet, amount: '5', chain });
    expect(first.reference).toEqual(expect.any(String));
    // The amount is the second session's due amount (5.000001), but the reference names the first (due 5).
    await insertTransfer(db.store, {
      chain,
      to: wallet,
      token: USDC_MINT,
      amount: second.amountDue,
      block: 990n,
      referenceKeys: [solanaAddress(), first.reference!],
      txHash: signature(),
    });
    await setHead(db.store, { chain, head: 1000n, finalized: 989n });
    await e.reconcile({ chain, livemode: true });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'confirming', confirmations: 11 });
    expect(await statusOf(db.store, second.id)).toMatchObject({ status: 'created' });
    const { rows } = await db.store.query(`SELECT match_method FROM transfers WHERE session_id = $1`, [first.id]);
    expect(rows).toEqual([{ match_method: 'reference' }]);

    // 60 slots deep but not finalized: still confirming (solana confirms at finalized only).
    await setHead(db.store, { chain, head: 1050n, finalized: 989n });
    await e.reconcile({ chain, livemode: true });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'confirming', confirmations: 61 });

    await setHead(db.store, { chain, head: 1051n, finalized: 990n });
    await e.reconcile({ chain, livemode: true });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'settled', amount_received: '5000001' });
    expect(await eventsOf(db.store, first.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.overpaid', 'payment.settled']);
    expect(await eventsOf(db.store, second.id)).toEqual([]);
  });

  test("on an address another merchant verified, a session's reference still pays it, its amount alone never does", async () => {
    const e = engine();
    const owner = await newMerchant(db.store);
    const other = await newMerchant(db.store);
    const wallet = solanaAddress();
    const ownerSession = await newSession(db.store, { merchantId: owner, wallet, amount: '5', chain });
    const byReference = await newSession(db.store, { merchantId: other, wallet, amount: '7', chain });
    const byAmount = await newSession(db.store, { merchantId: other, wallet, amount: '9', chain });
    await addWallet(db.store, { merchantId: owner, chain, address: wallet, verifiedBy: 'operator' });
    const send = (amount: bigint, block: bigint, referenceKeys: string[] = []) =>
      insertTransfer(db.store, { chain, to: wallet, token: USDC_MINT, amount, block, referenceKeys, txHash: signature() });
    // The reference is a random key only that session's checkout shows: decisive whoever verified the address.
    const referenced = await send(byReference.amountDue, 2000n, [byReference.reference!]);
    const exactForOwner = await send(ownerSession.amountDue, 2001n);
    // (Before the owner's session was paid, rule 5 would have given it this one as its lone
    // waiting session's overpayment: as if the other merchant's sessions were not there.)
    const exactForOther = await send(byAmount.amountDue, 2002n);
    await setHead(db.store, { chain, head: 2010n, finalized: 1990n });
    await e.reconcile({ chain, livemode: true });
    const { rows } = await db.store.query<{ id: bigint; session_id: string | null; match_method: string | null }>(
      'SELECT id, session_id, match_method FROM transfers WHERE id = ANY($1::bigint[]) ORDER BY id',
      [[referenced.id, exactForOwner.id, exactForOther.id]],
    );
    expect(rows.map(({ session_id, match_method }) => ({ session_id, match_method }))).toEqual([
      { session_id: byReference.id, match_method: 'reference' },
      { session_id: ownerSession.id, match_method: 'amount' },
      { session_id: null, match_method: null },
    ]);
    expect(await statusOf(db.store, byAmount.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test('a reference naming a session on another wallet does not pay it, nor anything else', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = solanaAddress();
    const session = await newSession(db.store, { merchantId, wallet, amount: '5', chain });
    const { id } = await insertTransfer(db.store, {
      chain,
      to: solanaAddress(),
      token: USDC_MINT,
      amount: session.amountDue,
      block: 1100n,
      referenceKeys: [session.reference!],
      txHash: signature(),
    });
    const result = await e.reconcile({ chain, livemode: true });
    expect(result.unmatched).toBe(1);
    const { rows } = await db.store.query('SELECT session_id FROM transfers WHERE id = $1', [id]);
    expect(rows[0]!.session_id).toBeNull();
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'created' });
  });

  test('one credit whose references name two sessions (one transaction paying two invoices into one account) pays neither: it waits for the merchant', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = solanaAddress();
    const ten = await newSession(db.store, { merchantId, wallet, amount: '10', chain });
    const twenty = await newSession(db.store, { merchantId, wallet, amount: '20', chain });
    // The balance shows only the 30 that arrived; which part belongs to whom cannot be told.
    const { id } = await insertTransfer(db.store, {
      chain,
      to: wallet,
      token: USDC_MINT,
      amount: ten.amountDue + twenty.amountDue,
      block: 1200n,
      referenceKeys: [ten.reference!, twenty.reference!],
      txHash: signature(),
    });
    const result = await e.reconcile({ chain, livemode: true });
    expect(result).toMatchObject({ matched: 0, unmatched: 1 });
    expect((await db.store.query('SELECT session_id FROM transfers WHERE id = $1', [id])).rows[0]!.session_id).toBeNull();
    expect(await statusOf(db.store, ten.id)).toMatchObject({ status: 'created' });
    expect(await statusOf(db.store, twenty.id)).toMatchObject({ status: 'created' });
  });
});

import { describe, expect, test } from 'vitest';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi } from '../helpers/api.ts';
import { addWallet } from '../../src/accounts/index.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { insertTransfer, newEvmWallet, setHead, statusOf } from '../helpers/engine.ts';

/** One merchant must never see, be matched or claim money sent to another merchant's wallet. */
const db = useTestDatabase('engine_cross_merchant');
const { call } = useApi(db, { checked: false });
const engine = () => createEngine({ store: db.store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }) });

const session = (key: string, amount: string, wallet: string) =>
  call('POST', '/api/v1/sessions', { key, body: { amount, currency: 'USDC', chain: 'polygon', merchantWallet: wallet } });

let nextBlock = 10_000n;
/** Stores one transfer to `wallet` in a block of its own and runs the engine over it. */
async function pay(wallet: string, amount: bigint | string) {
  nextBlock += 10n;
  const transfer = await insertTransfer(db.store, { livemode: true, to: wallet, amount: BigInt(amount), block: nextBlock });
  await setHead(db.store, { livemode: true, head: nextBlock + 100n });
  await engine().reconcile({ chain: 'polygon', livemode: true });
  return transfer;
}

async function attributionOf(transferId: bigint) {
  const { rows } = await db.store.query<{ session_id: string | null; match_method: string | null }>(
    'SELECT session_id, match_method FROM transfers WHERE id = $1',
    [transferId],
  );
  return rows[0]!;
}

const unmatchedIds = async (key: string) => (await call('GET', '/api/v1/transfers/unmatched', { key })).body.data.map((t: { id: string }) => t.id).sort();

describe('wallets shared between merchants', () => {
  test('a wallet another merchant verified cannot be used inline (409), and nothing is written', async () => {
    const a = await newMerchant(db.store, 'Owner');
    const b = await newMerchant(db.store, 'Intruder');
    const wallet = newEvmWallet();
    await addWallet(db.store, { merchantId: a.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const refused = await session(b.live, '7', wallet);
    expect(refused).toMatchObject({
      status: 409,
      body: { error: `merchantWallet ${wallet} is a verified wallet of another merchant; use a receiving wallet of your own` },
    });
    const { rowCount } = await db.store.query('SELECT 1 FROM wallets WHERE merchant_id = $1', [b.id]);
    expect(rowCount).toBe(0);
  });

  test('an unverified address two merchants use: no amount match across them, no listing, no claim, until one verifies it', async () => {
    const a = await newMerchant(db.store, 'A');
    const b = await newMerchant(db.store, 'B');
    const wallet = newEvmWallet();
    const sa = await session(a.live, '25', wallet);
    const sb = await session(b.live, '10', wallet);
    expect([sa.status, sb.status]).toEqual([201, 201]);
    // B's exact due amount arrives: with A's session on the same address the amount cannot say whose it is.
    const exactForB = await insertTransfer(db.store, { livemode: true, to: wallet, amount: BigInt(sb.body.amountDueBaseUnits), block: 1000n });
    const stray = await insertTransfer(db.store, { livemode: true, to: wallet, amount: 100_000_000n, block: 1001n });
    await setHead(db.store, { livemode: true, head: 1100n });
    await engine().reconcile({ chain: 'polygon', livemode: true });
    expect((await statusOf(db.store, sb.body.id)).status).toBe('created');
    expect((await statusOf(db.store, sa.body.id)).status).toBe('created');
    for (const key of [a.live, b.live]) {
      expect((await call('GET', '/api/v1/transfers/unmatched', { key })).body.data).toEqual([]);
      const claim = await call('POST', `/api/v1/transfers/trf_${stray.id}/attribution`, { key, body: { sessionId: key === a.live ? sa.body.id : sb.body.id } });
      expect(claim.status).toBe(404);
    }
    // A proves the wallet is theirs: A sees both transfers and can attribute; B still sees nothing.
    await addWallet(db.store, { merchantId: a.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    const listed = (await call('GET', '/api/v1/transfers/unmatched', { key: a.live })).body.data.map((t: { id: string }) => t.id).sort();
    expect(listed).toEqual([`trf_${exactForB.id}`, `trf_${stray.id}`].sort());
    expect((await call('GET', '/api/v1/transfers/unmatched', { key: b.live })).body.data).toEqual([]);
  });

  test("the verified owner wins: its sessions are paid by amount, the other merchant's never are, and the owner attributes the rest by hand", async () => {
    const owner = await newMerchant(db.store, 'Owner');
    const other = await newMerchant(db.store, 'Other');
    const wallet = newEvmWallet();
    // Both open sessions on the address while nobody has verified it (inline, unverified).
    const ownerFirst = await session(owner.live, '25', wallet);
    const ownerSecond = await session(owner.live, '40', wallet);
    const others = await session(other.live, '10', wallet);
    expect([ownerFirst.status, ownerSecond.status, others.status]).toEqual([201, 201, 201]);
    // Nobody verified it: the owner's exact due amount waits, as before.
    const before = await pay(wallet, ownerFirst.body.amountDueBaseUnits);
    expect(await attributionOf(before.id)).toEqual({ session_id: null, match_method: null });
    expect((await statusOf(db.store, ownerFirst.body.id)).status).toBe('created');

    // The owner proves control while the other merchant's session is open.
    await addWallet(db.store, { merchantId: owner.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    // The other merchant's exact due amount is never paid by amount: the transfer waits for the owner.
    const othersAmount = await pay(wallet, others.body.amountDueBaseUnits);
    expect(await attributionOf(othersAmount.id)).toEqual({ session_id: null, match_method: null });
    expect((await statusOf(db.store, others.body.id)).status).toBe('created');
    // The owner's second session (40) is paid by its exact due amount, as if the other session were not there.
    const paid = await pay(wallet, ownerSecond.body.amountDueBaseUnits);
    expect(await attributionOf(paid.id)).toEqual({ session_id: ownerSecond.body.id, match_method: 'amount' });
    expect((await statusOf(db.store, ownerSecond.body.id)).status).toBe('confirmed');

    // What was left waits for the owner, who sees both transfers and attributes by hand; the other merchant sees none.
    expect(await unmatchedIds(owner.live)).toEqual([`trf_${before.id}`, `trf_${othersAmount.id}`].sort());
    expect(await unmatchedIds(other.live)).toEqual([]);
    const refused = await call('POST', `/api/v1/transfers/trf_${othersAmount.id}/attribution`, { key: other.live, body: { sessionId: others.body.id } });
    expect(refused.status).toBe(404);
    const attributed = await call('POST', `/api/v1/transfers/trf_${before.id}/attribution`, { key: owner.live, body: { sessionId: ownerFirst.body.id } });
    expect(attributed).toMatchObject({ status: 200, body: { transfer: { matchMethod: 'manual' }, session: { id: ownerFirst.body.id, status: 'confirmed' } } });
    // The other merchant's session was never paid; it expires as usual.
    expect(await statusOf(db.store, others.body.id)).toMatchObject({ status: 'created', amount_received: '0' });
  });

  test("an address its owner verified pays no other merchant's session by amount, even with no session of the owner open there", async () => {
    const owner = await newMerchant(db.store, 'Owner');
    const other = await newMerchant(db.store, 'Other');
    const wallet = newEvmWallet();
    const others = await session(other.live, '10', wallet);
    expect(others.status).toBe(201);
    await addWallet(db.store, { merchantId: owner.id, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    // Neither its exact due amount nor a lone session's under- or overpayment.
    for (const amount of [BigInt(others.body.amountDueBaseUnits), 5_000_000n, 12_000_000n]) {
      const transfer = await pay(wallet, amount);
      expect(await attributionOf(transfer.id)).toEqual({ session_id: null, match_method: null });
    }
    expect(await statusOf(db.store, others.body.id)).toMatchObject({ status: 'created', amount_received: '0' });
    expect((await unmatchedIds(owner.live)).length).toBe(3);
    expect(await unmatchedIds(other.live)).toEqual([]);
  });

  test('an address two merchants with sessions on it verified: amount matching still waits for the merchant', async () => {
    const first = await newMerchant(db.store, 'First');
    const second = await newMerchant(db.store, 'Second');
    const wallet = newEvmWallet();
    const a = await session(first.live, '25', wallet);
    const b = await session(second.live, '10', wallet);
    expect([a.status, b.status]).toEqual([201, 201]);
    for (const merchantId of [first.id, second.id]) await addWallet(db.store, { merchantId, chain: 'polygon', address: wallet, verifiedBy: 'operator' });
    for (const due of [a.body.amountDueBaseUnits, b.body.amountDueBaseUnits]) {
      const transfer = await pay(wallet, due);
      expect(await attributionOf(transfer.id)).toEqual({ session_id: null, match_method: null });
    }
    // Both proved control: both see them.
    expect((await unmatchedIds(first.live)).length).toBe(2);
    expect((await unmatchedIds(second.live)).length).toBe(2);
  });
});

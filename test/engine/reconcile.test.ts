import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { createEngine } from '../../src/engine/index.ts';
import { merchantFees } from '../../src/payments/sessions.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { eventsOf, expireNow, insertTransfer, newEvmWallet, newMerchant, newSession, removeAbove, setHead, statusOf, usdc } from '../helpers/engine.ts';

const db = useTestDatabase('engine_reconcile');
const logger = pino({ level: 'silent' });
const engine = () => createEngine({ store: db.store, logger, metrics: createMetricsRegistry({ defaultMetrics: false }) });
const chain = 'polygon' as const;
const livemode = true;

/** Every test works above the highest head so far, so tests in this file never share blocks. */
async function nextBase(): Promise<bigint> {
  const { rows } = await db.store.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}

async function setup(amount = '10', options: { toleranceBps?: number } = {}) {
  const merchantId = await newMerchant(db.store, options);
  const wallet = newEvmWallet();
  const session = await newSession(db.store, { merchantId, wallet, amount });
  return { merchantId, wallet, session, base: await nextBase() };
}

describe('reconcile() on stored transfers (as the ingester writes them)', () => {
  test('exact payment: confirming at detection, confirmed at 32 blocks, settled at finality, each event once', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    expect(session.amountDue).toBe(10_000_000n);
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirming', amount_received: '10000000', confirmations: 1 });

    await setHead(db.store, { head: base + 30n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirming', confirmations: 31 });

    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirmed', confirmations: 32 });

    await setHead(db.store, { head: base + 40n, finalized: base });
    await e.reconcile({ chain, livemode });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'settled', confirmations: 41 });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.settled']);
  });

  test('the payment.confirmed envelope carries the spec fields, amounts as decimal text and the metadata', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('12.5');
    const { txHash } = await insertTransfer(db.store, { to: wallet, amount: 12_500_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    const { rows } = await db.store.query('SELECT id, payload FROM events WHERE session_id = $1 AND type = $2', [session.id, 'payment.confirmed']);
    expect(rows).toHaveLength(1);
    const payload = rows[0]!.payload;
    expect(payload.id).toBe(rows[0]!.id);
    expect(payload.event).toBe('payment.confirmed');
    expect(payload.livemode).toBe(true);
    expect(new Date(payload.timestamp).toISOString()).toBe(payload.timestamp);
    expect(payload.data).toEqual({
      id: session.id,
      amount: '12.5',
      currency: 'USDC',
      chain: 'polygon',
      status: 'confirmed',
      txHash,
      confirmedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      amountDue: '12.5',
      amountReceived: '12.5',
      amountPending: '0',
      fee: '0.125',
      paymentAddress: wallet,
      confirmations: 32,
      expiresAt: session.expiresAt.toISOString(),
      metadata: { order: 'A-1' },
      // What was bought (issue 26): null when the session gave none.
      description: null,
      lineItems: null,
      // Priced in a fiat currency (issue 26): null when the session gave a token amount.
      price: null,
      priceQuote: null,
      livemode: true,
    });
  });

  test('underpaid then topped up: payment.underpaid with the remaining amount, then confirmed', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 4_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'pending', amount_received: '4000000' });
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.underpaid'`, [session.id]);
    expect(rows[0]!.payload.data).toMatchObject({ status: 'pending', amountReceived: '4', amountRemaining: '6' });

    await insertTransfer(db.store, { to: wallet, amount: 6_000_000n, block: base + 32n });
    await setHead(db.store, { head: base + 32n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirming', amount_received: '10000000' });
    await setHead(db.store, { head: base + 63n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirmed' });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.underpaid', 'payment.confirming', 'payment.confirmed']);
  });

  test('overpaid: payment.confirmed then payment.overpaid with the excess', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 15_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.overpaid']);
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.overpaid'`, [session.id]);
    expect(rows[0]!.payload.data).toMatchObject({ status: 'confirmed', amountReceived: '15', amountExcess: '5' });
  });

  test('two transfers in one block add up to the due amount', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 3_000_000n, block: base });
    await insertTransfer(db.store, { to: wallet, amount: 7_000_000n, block: base });
    await setHead(db.store, { head: base + 1n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirming', amount_received: '10000000', confirmations: 2 });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.confirmed']);
  });

  test('expiry with nothing received: expired, once, even with two engines', async () => {
    const { session } = await setup('10');
    await expireNow(db.store, session.id);
    await Promise.all([engine().reconcile({ chain, livemode }), engine().reconcile({ chain, livemode })]);
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'expired' });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.expired']);
  });

  test('expiry with part received: failed (reason underpaid)', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 2_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    await expireNow(db.store, session.id);
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'failed' });
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.failed'`, [session.id]);
    expect(rows[0]!.payload.data).toMatchObject({ status: 'failed', failureReason: 'underpaid', amountRemaining: '8' });
  });

  test('late payment inside the monitoring window: expired, then payment.late_confirmed', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await expireNow(db.store, session.id);
    await e.reconcile({ chain, livemode });
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirmed' });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.expired', 'payment.confirming', 'payment.late_confirmed']);
  });

  test('a payment after the monitoring window matches nothing and stays unmatched', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await expireNow(db.store, session.id, { closeWindow: true });
    const { id } = await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    const result = await e.reconcile({ chain, livemode });
    expect(result.unmatched).toBe(1);
    const { rows } = await db.store.query(
      'SELECT session_id, EXISTS (SELECT 1 FROM transfers_undecided q WHERE q.transfer_id = t.id) AS undecided FROM transfers t WHERE id = $1',
      [id],
    );
    expect(rows[0]).toEqual({ session_id: null, undecided: false });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.expired']);
  });

  test("removed transfers waiting in matching's queue, more than a batch of them, do not hold back the transfers behind them", async () => {
    // On a chain of its own, so the other tests' passes do not step over these entries.
    const arbitrum = 'arbitrum' as const;
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet(arbitrum);
    const session = await newSession(db.store, { merchantId, wallet, amount: '10', chain: arbitrum });
    // 5,001 transfers nobody decided, then a reorg removes them all (they wait for a re-inclusion).
    await db.store.query(
      `INSERT INTO transfers (livemode, chain, tx_hash, log_index, block_number, block_hash, block_time, token_address, to_address, amount)
       SELECT true, $1, '0x' || lpad(to_hex(g), 64, '0'), 0, 100 + g / 1000, '0x01', now(), $2, $3, 7 FROM generate_series(1, 5001) g`,
      [arbitrum, usdc(arbitrum), wallet],
    );
    await removeAbove(db.store, { chain: arbitrum, block: 99n });
    const { id } = await insertTransfer(db.store, { chain: arbitrum, to: wallet, amount: session.amountDue, block: 200n });
    await setHead(db.store, { chain: arbitrum, head: 200n });
    const result = await engine().reconcile({ chain: arbitrum, livemode });
    expect(result).toMatchObject({ matched: 1, unmatched: 0 });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirming' });
    const { rows } = await db.store.query<{ queued: number; paying: boolean }>(
      `SELECT count(*)::int AS queued, bool_or(transfer_id = $2) AS paying FROM transfers_undecided WHERE chain = $1`,
      [arbitrum, id],
    );
    // The removed ones still wait (a re-inclusion decides them then); the paying one left.
    expect(rows[0]).toEqual({ queued: 5001, paying: false });
  });

  test('a transfer attributed by hand before matching looked at it is decided: it leaves the queue and is listed nowhere as waiting', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    const { id } = await insertTransfer(db.store, { to: wallet, amount: 3n, block: base });
    const queued = async () => (await db.store.query('SELECT 1 FROM transfers_undecided WHERE transfer_id = $1', [id])).rowCount;
    expect(await queued()).toBe(1);
    // Attributed by other means while still queued (a direct write, as a tool would make it).
    await db.store.query(`UPDATE transfers SET session_id = $1, match_method = 'manual', matched_at = now() WHERE id = $2`, [session.id, id]);
    await setHead(db.store, { head: base });
    expect(await e.reconcile({ chain, livemode })).toMatchObject({ matched: 0, unmatched: 0 });
    expect(await queued()).toBe(0);
  });

  test('a reorg that removes an unconfirmed transfer takes the session back to created (payment.reorged)', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 2n });
    await e.reconcile({ chain, livemode });
    await removeAbove(db.store, { block: base - 1n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'created', amount_received: '0', confirmations: 0 });
    // The removed transaction is no longer the payment's: txHash is null again, in the row and the event.
    const {
      rows: [stored],
    } = await db.store.query('SELECT tx_hash FROM payment_sessions WHERE id = $1', [session.id]);
    expect(stored).toEqual({ tx_hash: null });
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.reorged'`, [session.id]);
    expect(rows[0]!.payload.data).toMatchObject({ status: 'created', amountReceived: '0', amountRemaining: '10', txHash: null });
    // Paid again on the new branch: confirming again, then confirmed.
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base + 5n });
    await setHead(db.store, { head: base + 40n });
    await e.reconcile({ chain, livemode });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.reorged', 'payment.confirming', 'payment.confirmed']);
  });

  test('a deep reorg after confirmation is recorded as an incident and reported, not hidden', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    await removeAbove(db.store, { block: base - 1n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'created' });
    expect(await eventsOf(db.store, session.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.reorged']);
    const { rows } = await db.store.query('SELECT kind, details FROM engine_incidents WHERE session_id = $1', [session.id]);
    expect(rows).toEqual([
      { kind: 'deep_reorg', details: { status: 'confirmed', stored_received: '10000000', received: '0', stored_confirmed: '10000000', confirmed: '0' } },
    ]);
  });

  test('two sessions for the same amount on one wallet get distinct due amounts and match in either order', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const first = await newSession(db.store, { merchantId, wallet, amount: '25' });
    const second = await newSession(db.store, { merchantId, wallet, amount: '25' });
    expect([first.amountDue, second.amountDue]).toEqual([25_000_000n, 25_000_001n]);
    const base = await nextBase();
    // The second session's payer pays first.
    await insertTransfer(db.store, { to: wallet, amount: 25_000_001n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, second.id)).toMatchObject({ status: 'confirmed' });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'created' });
    await insertTransfer(db.store, { to: wallet, amount: 25_000_000n, block: base + 32n });
    await setHead(db.store, { head: base + 63n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, first.id)).toMatchObject({ status: 'confirmed', amount_received: '25000000' });
    expect(await statusOf(db.store, second.id)).toMatchObject({ status: 'confirmed', amount_received: '25000001' });
  });

  test('an ambiguous partial payment (two sessions waiting on the wallet) stays unmatched', async () => {
    const e = engine();
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    await newSession(db.store, { merchantId, wallet, amount: '25' });
    await newSession(db.store, { merchantId, wallet, amount: '30' });
    const base = await nextBase();
    const { id } = await insertTransfer(db.store, { to: wallet, amount: 5_000_000n, block: base });
    await setHead(db.store, { head: base });
    const result = await e.reconcile({ chain, livemode });
    expect(result.unmatched).toBe(1);
    const { rows } = await db.store.query('SELECT session_id FROM transfers WHERE id = $1', [id]);
    expect(rows[0]!.session_id).toBeNull();
  });

  test('payment tolerance: 9.99 of 10 confirms when the merchant allows 0.5%', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10', { toleranceBps: 50 });
    await insertTransfer(db.store, { to: wallet, amount: 9_990_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'confirmed', amount_received: '9990000' });
  });

  test('reconcile is idempotent: a second pass writes nothing', async () => {
    const e = engine();
    const { wallet, base } = await setup('10');
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    const before = await db.store.query('SELECT count(*) AS n FROM events');
    const again = await e.reconcile({ chain, livemode });
    expect(again).toEqual({ matched: 0, unmatched: 0, changes: [] });
    expect((await db.store.query('SELECT count(*) AS n FROM events')).rows[0]).toEqual(before.rows[0]);
  });

  test('a transfer in the wrong token or to another wallet does not pay the session', async () => {
    const e = engine();
    const { wallet, session, base } = await setup('10');
    const usdt = '0xc2132D05D31c914a87C6611C10748AEb04B58e8F';
    await insertTransfer(db.store, { to: wallet, amount: 10_000_000n, block: base, token: usdt });
    await insertTransfer(db.store, { to: newEvmWallet(), amount: 10_000_000n, block: base });
    await setHead(db.store, { head: base + 31n });
    const result = await e.reconcile({ chain, livemode });
    expect(result.unmatched).toBe(2);
    expect(await statusOf(db.store, session.id)).toMatchObject({ status: 'created' });
  });

  test('fees: 1% per payment in base units, summed per merchant over confirmed and settled payments only', async () => {
    const metrics = createMetricsRegistry({ defaultMetrics: false });
    const e = createEngine({ store: db.store, logger, metrics });
    const merchantId = await newMerchant(db.store);
    const wallet = newEvmWallet();
    const paid = await newSession(db.store, { merchantId, wallet, amount: '12.34' });
    const unpaid = await newSession(db.store, { merchantId, wallet, amount: '99' });
    expect([paid.fee, unpaid.fee]).toEqual([123_400n, 990_000n]);
    const base = await nextBase();
    await insertTransfer(db.store, { to: wallet, amount: paid.amountDue, block: base });
    await setHead(db.store, { head: base + 31n });
    await e.reconcile({ chain, livemode });
    expect(await merchantFees(db.store, { merchantId, livemode })).toEqual([{ chain: 'polygon', currency: 'USDC', decimals: 6, payments: 1, fee: 123_400n }]);
    expect(await merchantFees(db.store, { merchantId, livemode: false })).toEqual([]);
    const text = await metrics.metrics();
    expect(text).toContain('svc_engine_transitions_total{chain="polygon",from="confirming",to="confirmed"} 1');
    expect(text).toContain('svc_engine_events_total{chain="polygon",type="payment.confirmed"} 1');
  });
});

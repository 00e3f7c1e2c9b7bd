import { describe, expect, test } from 'vitest';
import pino from 'pino';
import { useTestDatabase } from '../helpers/db.ts';
import { newMerchant, useApi, WALLET } from '../helpers/api.ts';
import { useScriptedChainRpc } from '../helpers/chainRpc.ts';
import { createEngine } from '../../src/engine/index.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { eventsOf, insertTransfer, newEvmWallet, removeAbove, setHead } from '../helpers/engine.ts';

/**
 * Refunds count only confirmed money (docs/security.md): sessions through the real API, transfers
 * and chain heads stored as the EVM ingester stores them, the real engine turning them into
 * states, and a reorg marking transfers removed as the ingester does. polygon: 32 blocks deep.
 * Refund transactions are served by a scripted RPC (completion verifies them on chain).
 */
const db = useTestDatabase('api_refunds_confirmed');
const chainRpc = useScriptedChainRpc();
const api = useApi(db, { lookups: chainRpc.lookups });
const metrics = createMetricsRegistry({ defaultMetrics: false });
const chain = 'polygon' as const;
const DEPTH = 32n;
/** One engine pass over polygon's live sessions (the store exists once the file's database does). */
const reconcile = () => createEngine({ store: db.store, logger: pino({ level: 'silent' }), metrics }).reconcile({ chain, livemode: true });

/** Every test works above the highest head so far, so tests never share blocks. */
async function nextBase(): Promise<bigint> {
  const { rows } = await db.store.query<{ head: bigint | null }>('SELECT max(head_block) AS head FROM chain_heads WHERE chain = $1', [chain]);
  return (rows[0]?.head ?? 0n) + 1000n;
}

/** A live payment of `amount` USDC on its own wallet, paid with `paid` base units and confirmed. */
async function confirmedPayment(amount: string, paid: bigint) {
  const m = await newMerchant(db.store);
  const wallet = newEvmWallet();
  const created = await api.call('POST', '/api/v1/payments', { key: m.live, body: { amount, currency: 'USDC', chain, merchantWallet: wallet } });
  expect(created.status).toBe(201);
  const base = await nextBase();
  await insertTransfer(db.store, { to: wallet, amount: paid, block: base });
  await setHead(db.store, { head: base + DEPTH - 1n });
  await reconcile();
  const payment = await api.call('GET', `/api/v1/payments/${created.body.id}`, { key: m.live });
  expect(payment.body).toMatchObject({ status: 'confirmed', amountPending: '0' });
  return { key: m.live, id: created.body.id as string, wallet, base };
}

/** POST /refunds to a payer's wallet (the fixtures' sender is not a checksummed address, so it is not a default). */
const refund = (key: string, body: Record<string, unknown>) => api.call('POST', '/api/v1/refunds', { key, body: { address: WALLET, ...body } });
/** Completes a refund with a transaction (on the scripted chain) that pays it exactly from the payment's wallet. */
async function complete(key: string, id: string, byte = 'cd') {
  const txHash = `0x${byte.repeat(32)}`;
  const { rows } = await db.store.query<{ pay_to: string; amount: string; to_address: string; token: string }>(
    'SELECT s.pay_to, r.amount::text, r.to_address, s.token_addresses[1] AS token FROM refunds r JOIN payment_sessions s ON s.id = r.session_id WHERE r.id = $1',
    [id],
  );
  const paid = rows[0]!;
  chainRpc.rpc.addTransaction(txHash, [{ token: paid.token, from: paid.pay_to, to: paid.to_address, amount: BigInt(paid.amount) }]);
  return api.call('POST', `/api/v1/refunds/${id}/complete`, { key, body: { txHash } });
}

// Matching gives a confirmed session only a transfer of exactly its due amount (a duplicate
// payment), so the second payments here repeat the first.
describe('a second payment to a confirmed payment', () => {
  test('is pending, not refundable, until it confirms; then it is received and refundable', async () => {
    const p = await confirmedPayment('10', 10_000_000n);
    await insertTransfer(db.store, { to: p.wallet, amount: 10_000_000n, block: p.base + 40n });
    await setHead(db.store, { head: p.base + 40n });
    await reconcile();
    // Both interfaces show the unconfirmed money apart from the confirmed money.
    expect((await api.call('GET', `/api/v1/payments/${p.id}`, { key: p.key })).body).toMatchObject({
      status: 'confirmed',
      amountReceived: '10',
      amountPending: '10',
    });
    expect((await api.call('GET', `/api/v1/sessions/${p.id}`, { key: p.key })).body).toMatchObject({ amountReceived: '10', amountPending: '10' });

    const pendingNote = '10 USDC more has been seen on chain but is not confirmed yet; it becomes refundable once it is';
    expect(await refund(p.key, { paymentId: p.id, amount: '12' })).toMatchObject({
      status: 409,
      body: { error: `amount 12 exceeds the confirmed money that can still be refunded: 10 USDC; ${pendingNote}` },
    });
    expect(await refund(p.key, { paymentId: p.id, amount: '20.000001' })).toMatchObject({
      status: 400,
      body: { error: 'amount 20.000001 exceeds what can still be refunded: 10 USDC' },
    });
    // The default amount is the confirmed money; after it, nothing is refundable until the rest confirms.
    expect(await refund(p.key, { paymentId: p.id })).toMatchObject({ status: 201, body: { amount: '10' } });
    expect(await refund(p.key, { paymentId: p.id, amount: '1' })).toMatchObject({
      status: 409,
      body: { error: `payment ${p.id} has no confirmed money left to refund: ${pendingNote}` },
    });
    const { rows: refunds } = await db.store.query('SELECT count(*)::int AS n FROM refunds WHERE session_id = $1', [p.id]);
    expect(refunds[0]!.n).toBe(1);

    await setHead(db.store, { head: p.base + 40n + DEPTH - 1n });
    await reconcile();
    expect((await api.call('GET', `/v1/payments/${p.id}`, { key: p.key })).body).toMatchObject({ amountReceived: '20', amountPending: '0' });
    expect(await refund(p.key, { paymentId: p.id })).toMatchObject({ status: 201, body: { amount: '10' } });
    // The excess is reported once it is confirmed money, and events carry the same two amounts.
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.overpaid'`, [p.id]);
    expect(rows.map((row) => row.payload.data)).toEqual([expect.objectContaining({ amountReceived: '20', amountPending: '0', amountExcess: '10' })]);
  });

  test('a shallow reorg that removes it before it confirmed is an ordinary reorg, not a deep-reorg incident', async () => {
    const p = await confirmedPayment('10', 10_000_000n);
    await insertTransfer(db.store, { to: p.wallet, amount: 10_000_000n, block: p.base + 40n });
    await setHead(db.store, { head: p.base + 40n });
    await reconcile();
    await removeAbove(db.store, { block: p.base + 39n });
    await reconcile();
    expect((await api.call('GET', `/api/v1/payments/${p.id}`, { key: p.key })).body).toMatchObject({
      status: 'confirmed',
      amountReceived: '10',
      amountPending: '0',
    });
    const { rows } = await db.store.query('SELECT kind FROM engine_incidents WHERE session_id = $1', [p.id]);
    expect(rows).toEqual([]);
  });
});

describe('completing a refund', () => {
  test('is refused (409) while the confirmed money does not cover it, and allowed once it does', async () => {
    const p = await confirmedPayment('10', 10_000_000n);
    const requested = await refund(p.key, { paymentId: p.id, amount: '10' });
    expect(requested.status).toBe(201);
    // A duplicate payment arrives, then a reorg deeper than 32 blocks (not final) removes the
    // first: the session still covers its due amount with money seen, but none of it is confirmed.
    await insertTransfer(db.store, { to: p.wallet, amount: 10_000_000n, block: p.base + 40n });
    await setHead(db.store, { head: p.base + 40n });
    await reconcile();
    await db.store.query(`UPDATE transfers SET status = 'removed', removed_at = now() WHERE to_address = $1 AND block_number = $2`, [p.wallet, String(p.base)]);
    await reconcile();
    expect((await api.call('GET', `/api/v1/payments/${p.id}`, { key: p.key })).body).toMatchObject({
      status: 'confirmed',
      amountReceived: '0',
      amountPending: '10',
    });

    expect(await complete(p.key, requested.body.id)).toMatchObject({
      status: 409,
      body: {
        error: `refund ${requested.body.id} of 10 USDC cannot be completed: its payment holds 0 USDC of confirmed money, 0 USDC of it already refunded, so at most 0 USDC more can be (money not confirmed yet counts once it is; a reorg may have removed a transfer)`,
      },
    });
    expect((await api.call('GET', `/api/v1/refunds/${requested.body.id}`, { key: p.key })).body.status).toBe('requested');

    await setHead(db.store, { head: p.base + 40n + DEPTH - 1n });
    await reconcile();
    expect(await complete(p.key, requested.body.id)).toMatchObject({
      status: 200,
      body: { status: 'completed', requiresAttention: false, attentionReason: null },
    });
  });
});

/** A confirmed payment of 10 paid twice (20 confirmed), with `amounts` refunded and completed. */
async function twicePaidWithCompletedRefunds(...amounts: string[]) {
  const p = await confirmedPayment('10', 10_000_000n);
  await insertTransfer(db.store, { to: p.wallet, amount: 10_000_000n, block: p.base + 1n });
  await setHead(db.store, { head: p.base + 1n + DEPTH });
  await reconcile();
  const ids: string[] = [];
  for (const [i, amount] of amounts.entries()) {
    const requested = await refund(p.key, { paymentId: p.id, amount });
    expect(requested.status).toBe(201);
    const completed = await complete(p.key, requested.body.id, `c${i}`);
    expect(completed.body).toMatchObject({ status: 'completed', requiresAttention: false, attentionReason: null, flaggedAt: null });
    ids.push(requested.body.id);
  }
  return { ...p, refunds: ids };
}

describe('a reorg after a refund was completed', () => {
  test('flags the refund when it leaves it larger than the confirmed money: API field, refund.flagged event, incident and metric', async () => {
    const p = await twicePaidWithCompletedRefunds('12');
    const open = await refund(p.key, { paymentId: p.id, amount: '8' });
    // A reorg below finality (the ingester marks the orphaned transfer removed) takes the second 10 away.
    await removeAbove(db.store, { block: p.base });
    await reconcile();
    const flagged = await api.call('GET', `/api/v1/refunds/${p.refunds[0]}`, { key: p.key });
    expect(flagged.body).toMatchObject({
      status: 'completed',
      requiresAttention: true,
      attentionReason:
        "a reorg removed money this payment had received: it now holds 10 USDC of confirmed money, less than the 12 USDC already refunded; check the payment's transfers and recover the difference from the payer",
      flaggedAt: expect.any(String),
    });
    expect(await eventsOf(db.store, p.id)).toEqual([
      'payment.confirming',
      'payment.confirmed',
      'payment.overpaid',
      'refund.requested',
      'refund.completed',
      'refund.requested',
      'refund.flagged',
    ]);
    const { rows: events } = await db.store.query(`SELECT refund_id, payload FROM events WHERE type = 'refund.flagged' AND session_id = $1`, [p.id]);
    expect(events).toEqual([{ refund_id: p.refunds[0], payload: expect.objectContaining({ event: 'refund.flagged', data: flagged.body }) }]);
    const { rows: incidents } = await db.store.query('SELECT kind, details FROM engine_incidents WHERE session_id = $1 ORDER BY id', [p.id]);
    expect(incidents.map((row) => row.kind)).toEqual(['deep_reorg', 'refund_exceeds_confirmed']);
    expect(incidents[1]!.details).toMatchObject({ confirmed: '10000000', refunds: [p.refunds[0]] });
    expect(await metrics.getSingleMetricAsString('svc_engine_incidents_total')).toContain(
      'svc_engine_incidents_total{chain="polygon",kind="refund_exceeds_confirmed"} 1',
    );
    // The open request cannot be completed on top of it.
    expect(await complete(p.key, open.body.id, 'ee')).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining('its payment holds 10 USDC of confirmed money, 12 USDC of it already refunded, so at most 0 USDC more can be') },
    });

    // Flagged once: further passes add nothing.
    await reconcile();
    const { rows: again } = await db.store.query(`SELECT count(*)::int AS n FROM events WHERE type = 'refund.flagged' AND session_id = $1`, [p.id]);
    expect(again[0]!.n).toBe(1);
  });

  test('does not flag a refund that the remaining confirmed money still covers', async () => {
    const p = await twicePaidWithCompletedRefunds('4');
    await removeAbove(db.store, { block: p.base });
    await reconcile();
    expect((await api.call('GET', `/api/v1/refunds/${p.refunds[0]}`, { key: p.key })).body).toMatchObject({ requiresAttention: false });
    expect(await eventsOf(db.store, p.id)).not.toContain('refund.flagged');
  });
});

describe('a live refund address', () => {
  test('that nobody can spend from (the dead address, the token contract) is refused like a receiving wallet, and nothing is written', async () => {
    const { key, id } = await confirmedPayment('10', 10_000_000n);
    for (const address of ['0x000000000000000000000000000000000000dEaD', '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359']) {
      const refused = await api.call('POST', '/api/v1/refunds', { key, body: { paymentId: id, amount: '1', address } });
      expect([refused.status, refused.body.error]).toEqual([400, expect.stringContaining('funds sent there cannot be spent')]);
    }
    expect((await db.store.query('SELECT 1 FROM refunds WHERE session_id = $1', [id])).rowCount).toBe(0);
    const accepted = await api.call('POST', '/api/v1/refunds', {
      key,
      body: { paymentId: id, amount: '1', address: '0x52908400098527886E0F7030069857D2E4169EE7' },
    });
    expect(accepted.status).toBe(201);
  });
});

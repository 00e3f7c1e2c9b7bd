import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { useTestDatabase } from '../helpers/db.ts';
import type { Anvil } from '../helpers/anvil.ts';
import { startAnvilStack, type AnvilStack } from '../helpers/anvilStack.ts';
import { eventsOf } from '../helpers/engine.ts';
import { waitFor } from '../helpers/waitFor.ts';

/**
 * End to end on a real chain: sessions through the real API, payments as ERC-20 transfers on
 * anvil (polygon's chain id and real USDC address), the real EVM ingester storing them and
 * calling the engine, events read from the outbox.
 */
const db = useTestDatabase('engine_e2e');
const chain = 'polygon' as const;
const USDC: Address = '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359';
const DEPTH = 32;

let stack: AnvilStack;
let anvil: Anvil;
let call: AnvilStack['call'];
let merchant: AnvilStack['merchant'];
let wallet: AnvilStack['wallet'];

beforeAll(async () => {
  stack = await startAnvilStack({ store: db.store, connectionString: db.connectionString, chain });
  ({ anvil, call, merchant, wallet } = stack);
});

afterAll(async () => {
  await stack?.close();
});

async function createSession(payTo: Address, amount: string, extra: Record<string, unknown> = {}) {
  const answer = await call('POST', '/api/v1/sessions', {
    key: merchant.live,
    body: { amount, currency: 'USDC', chain, merchantWallet: payTo, metadata: { order: amount }, ...extra },
  });
  expect(answer.status).toBe(201);
  return answer.body as { id: string; amountDue: string; amountDueBaseUnits: string };
}

async function session(id: string) {
  return (await call('GET', `/api/v1/sessions/${id}`, { key: merchant.live })).body;
}

/** Waits until the session's status (as Interface A shows it) is `status`. */
async function until(id: string, status: string, timeoutMs = 20_000) {
  await waitFor(async () => (await session(id)).status === status, `${id} to be ${status}`, timeoutMs);
  return session(id);
}

async function pay(to: Address, amount: bigint) {
  const hash = await anvil.pay(USDC, to, amount);
  await anvil.waitMined(hash);
  return hash;
}

/** Mines enough blocks on top of everything so far for the confirmation rule. */
const confirm = () => anvil.mine(DEPTH);

async function expire(id: string) {
  await db.store.query(`UPDATE payment_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
}

describe('payments end to end: API -> anvil -> EVM ingester -> engine -> outbox', () => {
  test('exact payment: confirming with the tx hash, confirmed after 32 blocks, settled at finality', async () => {
    const to = await wallet();
    const s = await createSession(to, '10');
    const hash = await pay(to, BigInt(s.amountDueBaseUnits));
    const seen = await until(s.id, 'confirming');
    // Seen but not confirmed: pending, not received (docs/security.md).
    expect(seen).toMatchObject({ txHash: hash, amountReceived: '0', amountPending: '10' });
    expect(seen.confirmations).toBeGreaterThanOrEqual(1);
    await confirm();
    expect(await until(s.id, 'confirmed')).toMatchObject({ confirmations: expect.any(Number), confirmedAt: expect.any(String) });
    await anvil.mine(64); // anvil's finalized tag trails the head by 64 blocks
    await until(s.id, 'settled');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.settled']);
    const { rows } = await db.store.query(`SELECT payload FROM events WHERE session_id = $1 AND type = 'payment.confirmed'`, [s.id]);
    expect(rows[0]!.payload.data).toMatchObject({
      id: s.id,
      amount: '10',
      currency: 'USDC',
      chain,
      status: 'confirmed',
      txHash: hash,
      metadata: { order: '10' },
      livemode: true,
    });
  });

  test('underpaid then topped up', async () => {
    const to = await wallet();
    const s = await createSession(to, '20');
    await pay(to, 5_000_000n);
    await confirm();
    expect(await until(s.id, 'pending')).toMatchObject({ amountReceived: '5' });
    await pay(to, 15_000_000n);
    await until(s.id, 'confirming');
    await confirm();
    await until(s.id, 'confirmed');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.underpaid', 'payment.confirming', 'payment.confirmed']);
  });

  test('overpaid', async () => {
    const to = await wallet();
    const s = await createSession(to, '30');
    await pay(to, 45_000_000n);
    await confirm();
    await until(s.id, 'confirmed');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.overpaid']);
  });

  test('two transfers add up', async () => {
    const to = await wallet();
    const s = await createSession(to, '40');
    await pay(to, 10_000_000n);
    await pay(to, 30_000_000n);
    await until(s.id, 'confirming');
    await confirm();
    expect(await until(s.id, 'confirmed')).toMatchObject({ amountReceived: '40' });
    expect((await eventsOf(db.store, s.id)).filter((e) => e === 'payment.confirmed')).toHaveLength(1);
  });

  test('expiry with nothing received, then a late payment inside the monitoring window', async () => {
    const to = await wallet();
    const s = await createSession(to, '50');
    await expire(s.id);
    await until(s.id, 'expired');
    await pay(to, BigInt(s.amountDueBaseUnits));
    await until(s.id, 'confirming');
    await confirm();
    await until(s.id, 'confirmed');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.expired', 'payment.confirming', 'payment.late_confirmed']);
  });

  test('expiry with a part received: failed', async () => {
    const to = await wallet();
    const s = await createSession(to, '60');
    await pay(to, 10_000_000n);
    await confirm();
    await until(s.id, 'pending');
    await expire(s.id);
    await until(s.id, 'failed');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.underpaid', 'payment.failed']);
  });

  test('a reorg before confirmation takes the session back to created (payment.reorged); a new payment confirms it', async () => {
    const to = await wallet();
    const s = await createSession(to, '70');
    await pay(to, BigInt(s.amountDueBaseUnits));
    await until(s.id, 'confirming');
    await anvil.reorg(3);
    await anvil.mine(1);
    // The orphaned transaction no longer pays it: no txHash until a transaction counts again.
    expect(await until(s.id, 'created')).toMatchObject({ amountReceived: '0', txHash: null });
    await pay(to, BigInt(s.amountDueBaseUnits));
    await confirm();
    await until(s.id, 'confirmed');
    expect(await eventsOf(db.store, s.id)).toEqual(['payment.confirming', 'payment.reorged', 'payment.confirming', 'payment.confirmed']);
  });

  test('two sessions for the same amount on one wallet, paid in reverse order', async () => {
    const to = await wallet();
    const first = await createSession(to, '80');
    const second = await createSession(to, '80');
    expect([first.amountDue, second.amountDue]).toEqual(['80', '80.000001']);
    await pay(to, BigInt(second.amountDueBaseUnits));
    await until(second.id, 'confirming');
    expect((await session(first.id)).status).toBe('created');
    await pay(to, BigInt(first.amountDueBaseUnits));
    await confirm();
    await until(first.id, 'confirmed');
    await until(second.id, 'confirmed');
    expect(await eventsOf(db.store, first.id)).toEqual(['payment.confirming', 'payment.confirmed']);
    expect(await eventsOf(db.store, second.id)).toEqual(['payment.confirming', 'payment.confirmed']);
  });

  test('a duplicate payment is pending and not refundable until 32 blocks deep; a deep reorg after its refund was completed flags the refund', async () => {
    const to = await wallet();
    const s = await createSession(to, '15');
    const refund = (body: Record<string, unknown>) => call('POST', '/api/v1/refunds', { key: merchant.live, body: { paymentId: s.id, address: to, ...body } });
    await pay(to, 15_000_000n);
    await confirm();
    await until(s.id, 'confirmed');
    await pay(to, 15_000_000n); // exactly the due amount again: it pays the confirmed session
    await waitFor(async () => (await session(s.id)).amountPending === '15', 'the duplicate to be pending');
    expect(await session(s.id)).toMatchObject({ status: 'confirmed', amountReceived: '15', amountPending: '15' });
    const customer = privateKeyToAccount(generatePrivateKey()).address;
    expect(await refund({ amount: '20', address: customer })).toMatchObject({
      status: 409,
      body: { error: expect.stringContaining('15 USDC more has been seen on chain but is not confirmed yet') },
    });
    // The merchant's wallet sends the refund in the next block (completion verifies it on chain
    // once it is as deep as the confirmation rule); the duplicate confirms with it.
    const refundTx = await anvil.transfer(USDC, to, customer, 20_000_000n);
    await anvil.waitMined(refundTx);

    await confirm();
    await waitFor(async () => (await session(s.id)).amountReceived === '30', 'the duplicate to confirm');
    const requested = await refund({ amount: '20', address: customer });
    expect(requested.status).toBe(201);
    expect((await call('POST', `/api/v1/refunds/${requested.body.id}/complete`, { key: merchant.live, body: { txHash: refundTx } })).status).toBe(200);

    // 34 blocks replaced (the duplicate's, the refund's and the 32 on them), above anvil's finalized block (head - 64).
    await anvil.reorg(DEPTH + 2);
    await anvil.mine(1);
    await waitFor(async () => (await session(s.id)).amountReceived === '15', 'the reorg to remove the duplicate');
    let flagged: { requiresAttention: boolean; attentionReason: string | null } = { requiresAttention: false, attentionReason: null };
    await waitFor(async () => {
      flagged = (await call('GET', `/api/v1/refunds/${requested.body.id}`, { key: merchant.live })).body;
      return flagged.requiresAttention;
    }, 'the refund to be flagged');
    expect(flagged.attentionReason).toContain('it now holds 15 USDC of confirmed money, less than the 20 USDC already refunded');
    // The first payment is final by now, so the session also settles on what is left.
    expect((await eventsOf(db.store, s.id)).filter((e) => e.startsWith('refund.'))).toEqual(['refund.requested', 'refund.completed', 'refund.flagged']);
  });

  test('an unmatched transfer is listed and attributed by hand through the API', async () => {
    const to = await wallet();
    const a = await createSession(to, '90');
    const b = await createSession(to, '95');
    const hash = await pay(to, 33_000_000n); // fits neither session: ambiguous
    let listed: { id: string; txHash: string }[] = [];
    await waitFor(async () => {
      listed = (await call('GET', '/api/v1/transfers/unmatched', { key: merchant.live })).body.data;
      return listed.some((t) => t.txHash === hash);
    }, 'the transfer to be listed as unmatched');
    const transfer = listed.find((t) => t.txHash === hash)!;
    const attributed = await call('POST', `/api/v1/transfers/${transfer.id}/attribution`, { key: merchant.live, body: { sessionId: b.id } });
    expect(attributed).toMatchObject({ status: 200, body: { session: { id: b.id, status: 'confirming' } } });
    await confirm();
    expect(await until(b.id, 'pending')).toMatchObject({ amountReceived: '33' });
    expect((await session(a.id)).status).toBe('created');
    expect(await eventsOf(db.store, b.id)).toEqual(['payment.confirming', 'payment.underpaid']);
  });
});

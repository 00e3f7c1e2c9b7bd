import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { address, type KeyPairSigner } from '@solana/kit';
import { useTestDatabase } from '../../helpers/db.ts';
import type { SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { startSolanaStack, transfersOf, waitFor } from '../../helpers/solanaIngest.ts';

// The real ingester feeding the real engine: what a session on solana goes through.
const db = useTestDatabase('solana_matching');
let stack: Awaited<ReturnType<typeof startSolanaStack>>;
let rpc: SolanaTestRpc;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;

beforeAll(async () => {
  stack = await startSolanaStack(db.store);
  ({ rpc, merchant, payer } = stack);
});

afterAll(async () => {
  await stack?.close();
});

const newSession = (amount: string) => stack.newSession(amount);

async function session(id: string) {
  const { rows } = await db.store.query<{ status: string; amount_received: string; tx_hash: string | null }>(
    'SELECT status, amount_received::text, tx_hash FROM payment_sessions WHERE id = $1',
    [id],
  );
  return rows[0]!;
}

async function eventsOf(id: string): Promise<string[]> {
  const { rows } = await db.store.query<{ type: string }>('SELECT type FROM events WHERE session_id = $1 ORDER BY seq', [id]);
  return rows.map((row) => row.type);
}

async function matched(signature: string) {
  return waitFor(async () => {
    const [row] = await transfersOf(db.store, signature);
    return row?.session_id ? row : undefined;
  }, `transfer ${signature} to be matched`);
}

describe('solana sessions paid through the ingester', () => {
  test('confirmed commitment makes the session confirming; finalized confirms and settles it', async () => {
    const created = await newSession('25');
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 25_000_000n, references: [address(created.reference!)] });
    const row = await matched(paid.signature);
    expect(row).toMatchObject({ session_id: created.id, match_method: 'reference' });
    await waitFor(async () => (await session(created.id)).status === 'confirming', 'confirming');
    expect(await eventsOf(created.id)).toEqual(['payment.confirming']);

    rpc.ledger.finalize();
    await waitFor(async () => (await session(created.id)).status === 'settled', 'settled');
    expect(await eventsOf(created.id)).toEqual(['payment.confirming', 'payment.confirmed', 'payment.settled']);
    expect(await session(created.id)).toMatchObject({ amount_received: '25000000', tx_hash: paid.signature });
  });

  test('a reference matches its session whatever the amount; an underpayment is reported once final', async () => {
    const created = await newSession('40');
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 15_000_000n, references: [address(created.reference!)] });
    expect(await matched(paid.signature)).toMatchObject({ session_id: created.id, match_method: 'reference', amount: '15000000' });
    rpc.ledger.finalize();
    await waitFor(async () => (await eventsOf(created.id)).includes('payment.underpaid'), 'payment.underpaid');
    expect(await session(created.id)).toMatchObject({ status: 'pending', amount_received: '15000000' });
  });

  test('two sessions for the same amount: with references each gets its own payment; without, the unique due amount decides', async () => {
    const first = await newSession('9.99');
    const second = await newSession('9.99');
    expect(BigInt(second.amountDue)).toBe(BigInt(first.amountDue) + 1n);
    // The second payer's wallet left the reference out and paid the exact due amount shown.
    const withoutReference = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: BigInt(second.amountDue) });
    const withReference = await rpc.pay({
      from: payer,
      to: merchant.address,
      currency: 'USDC',
      amount: BigInt(first.amountDue),
      references: [address(first.reference!)],
    });
    expect(await matched(withoutReference.signature)).toMatchObject({ session_id: second.id, match_method: 'amount', reference_keys: [] });
    expect(await matched(withReference.signature)).toMatchObject({ session_id: first.id, match_method: 'reference' });
    rpc.ledger.finalize();
    await waitFor(async () => (await session(first.id)).status === 'settled' && (await session(second.id)).status === 'settled', 'both settled');
  });

  test('a payment that vanishes before finalized takes the session back out of confirming', async () => {
    const created = await newSession('3');
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 3_000_000n, references: [address(created.reference!)] });
    await matched(paid.signature);
    await waitFor(async () => (await session(created.id)).status === 'confirming', 'confirming');
    rpc.ledger.drop(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    await waitFor(async () => (await session(created.id)).status !== 'confirming', 'the session to leave confirming');
    expect(await session(created.id)).toMatchObject({ amount_received: '0' });
    expect((await transfersOf(db.store, paid.signature))[0]!.status).toBe('removed');
    expect(await eventsOf(created.id)).not.toContain('payment.confirmed');
  });
});

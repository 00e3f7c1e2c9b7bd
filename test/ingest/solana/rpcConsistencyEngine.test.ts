import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { address, type KeyPairSigner } from '@solana/kit';
import { useTestDatabase } from '../../helpers/db.ts';
import type { SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import type { Engine } from '../../../src/engine/index.ts';
import { addWallet } from '../../../src/accounts/wallets.ts';
import type { SolanaIngester } from '../../../src/ingest/solana/index.ts';
import { chainHead, startSolanaStack, transfersOf, waitFor } from '../../helpers/solanaIngest.ts';

const db = useTestDatabase('solana_rpc_consistency_engine');
let stack: Awaited<ReturnType<typeof startSolanaStack>>;
let rpc: SolanaTestRpc;
let ingester: SolanaIngester;
let engine: Engine;
let merchantId: string;
let merchant: KeyPairSigner;
let payer: KeyPairSigner;

beforeAll(async () => {
  stack = await startSolanaStack(db.store);
  ({ rpc, ingester, engine, merchantId, merchant, payer } = stack);
});

afterAll(async () => {
  await stack?.close();
});

const newSession = (amount: string) => stack.newSession(amount);
async function session(id: string) {
  const { rows } = await db.store.query<{ status: string; amount_received: string }>(
    'SELECT status, amount_received::text FROM payment_sessions WHERE id = $1',
    [id],
  );
  return rows[0]!;
}
async function eventsOf(id: string): Promise<string[]> {
  const { rows } = await db.store.query<{ type: string }>('SELECT type FROM events WHERE session_id = $1 ORDER BY seq', [id]);
  return rows.map((row) => row.type);
}

describe('solana ingest, a transaction re-included in another slot', () => {
  test('the stored slot follows it: finalizing the first slot neither confirms nor settles; when that fork is abandoned too the session leaves confirming', async () => {
    const created = await newSession('11');
    const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 11_000_000n, references: [address(created.reference!)] });
    await waitFor(async () => (await session(created.id)).status === 'confirming', 'confirming');
    // Fork switch: the slot-S1 block is abandoned; the same transaction lands again in S2 = S1 + 5.
    const entry = rpc.ledger.find(paid.signature)!;
    const s1 = entry.slot;
    rpc.ledger.advance(5);
    entry.slot = rpc.ledger.slot;
    rpc.ledger.advance(1);
    rpc.ledger.finalize(s1 + 1n); // S1 < finalized < S2
    await waitFor(async () => (await transfersOf(db.store, paid.signature))[0]!.block_number === entry.slot, 'the transfer to move to S2');
    const { rows } = await db.store.query<{ slot: bigint; commitment: string }>('SELECT slot, commitment FROM solana_signatures WHERE signature = $1', [
      paid.signature,
    ]);
    expect(rows).toEqual([{ slot: entry.slot, commitment: 'confirmed' }]);
    await waitFor(async () => ((await chainHead(db.store))?.finalized_block ?? 0n) >= s1 + 1n, 'the finalized slot');
    await engine.idle();
    expect(await eventsOf(created.id)).not.toContain('payment.confirmed');
    expect((await session(created.id)).status).toBe('confirming');
    // The second fork is abandoned too.
    rpc.ledger.drop(paid.signature);
    rpc.ledger.advance();
    rpc.ledger.finalize();
    await waitFor(async () => (await transfersOf(db.store, paid.signature))[0]!.status === 'removed', 'removed');
    await waitFor(async () => (await session(created.id)).status !== 'confirming', 'the session to leave confirming');
    expect(await session(created.id)).toMatchObject({ amount_received: '0' });
    expect(await eventsOf(created.id)).not.toContain('payment.confirmed');
    expect(await eventsOf(created.id)).not.toContain('payment.settled');
  });
});

describe('solana ingest, getTokenAccountsByOwner failing', () => {
  test("known accounts are still ingested, and a new wallet's associated account is watched without it", async () => {
    rpc.failNext('getTokenAccountsByOwner', 1_000_000);
    try {
      // The periodic rediscovery comes due (discoverIntervalMs 200 in the harness).
      await new Promise((resolve) => setTimeout(resolve, 400));
      const paid = await rpc.pay({ from: payer, to: merchant.address, currency: 'USDC', amount: 1_234_567n });
      await waitFor(async () => (await transfersOf(db.store, paid.signature)).length === 1, 'the payment into the known account', 5_000);
      const fresh = await rpc.wallet();
      await addWallet(db.store, { merchantId, chain: 'solana', address: fresh.address, verifiedBy: 'operator' });
      const second = await rpc.pay({ from: payer, to: fresh.address, currency: 'USDC', amount: 2_345_678n });
      await waitFor(async () => (await transfersOf(db.store, second.signature)).length === 1, 'the payment into the new wallet', 5_000);
      expect(ingester.status()).toEqual({ state: 'leader' });
    } finally {
      rpc.failNext('getTokenAccountsByOwner', -1_000_000);
    }
  }, 20_000);
});

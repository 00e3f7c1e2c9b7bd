import { afterAll, beforeAll, expect, test } from 'vitest';
import { useTestDatabase } from '../../helpers/db.ts';
import { startSolanaRpc, type SolanaTestRpc } from '../../helpers/solanaRpc.ts';
import { createSolanaMerchant, startIngester, transfersOf } from '../../helpers/solanaIngest.ts';

/**
 * `syncOnce()` without `start()` (what bench/solana-catchup.ts does): every commit checks the
 * chain's lock, so it must take the lock itself, and refuse while another process holds it.
 */
const db = useTestDatabase('solana_sync_once');
let rpc: SolanaTestRpc;

beforeAll(async () => {
  rpc = await startSolanaRpc();
});
afterAll(async () => {
  await rpc?.stop();
});

test('syncOnce takes the lock, stores the payment, and a second ingester refuses while the first holds it', async () => {
  const { wallet } = await createSolanaMerchant(db.store, rpc);
  const payer = await rpc.wallet();
  await rpc.fund(payer.address, 'USDC', 10_000_000n);
  const paid = await rpc.pay({ from: payer, to: wallet.address, currency: 'USDC', amount: 2_500_000n });
  rpc.ledger.finalize();
  const first = startIngester({ store: db.store, rpc }).ingester;
  const second = startIngester({ store: db.store, rpc }).ingester;
  try {
    await first.syncOnce();
    expect((await transfersOf(db.store, paid.signature)).map((row) => row.amount)).toEqual(['2500000']);
    await expect(second.syncOnce()).rejects.toThrow('another process holds the Solana ingester lock');
  } finally {
    await first.stop();
    await second.stop();
  }
});

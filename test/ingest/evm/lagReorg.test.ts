import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitFor, waitProcessed } from '../../helpers/evmIngest.ts';

/**
 * The ingester down (or far behind) while the chain reorgs its last stored blocks and then
 * finalizes the new branch: when it comes back, the ranges ahead are all finalized history, read
 * without headers, so only asking the node about the checkpoint's own block finds the reorg. Found
 * by the reorg run (issue 30): the dropped transfers stayed counted and their sessions settled.
 */
const db = useTestDatabase('ingest_lag_reorg');
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const WALLET = getAddress('0x5555555555555555555555555555555555555555');

let anvil: Anvil;
let run: ReturnType<typeof startIngest> | undefined;

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await anvil.mine(100);
  await merchantWithWallets(db.store, chain, [WALLET]);
});
afterAll(async () => {
  await run?.ingest.stop();
  await anvil?.stop();
});

test('a reorg of the last stored blocks, finalized the other way while the ingester was down, is found and undone; no finality alert', async () => {
  run = startIngest({ db, chain, http: [anvil.rpcUrl] });
  await waitProcessed(db.store, chain, await anvil.blockNumber());
  const kept = await anvil.waitMined(await anvil.pay(usdc, WALLET, 2_000_000n));
  const dropped = await anvil.waitMined(await anvil.pay(usdc, WALLET, 1_000_000n));
  await waitProcessed(db.store, chain, dropped.blockNumber);
  expect((await transfers(db.store, chain)).filter((row) => row.status === 'observed')).toHaveLength(2);
  await run.ingest.stop();

  // The blocks after the 2 USDC payment (the 1 USDC one's mint and transfer) replaced, then the node finalizes far past it.
  const depth = Number((await anvil.blockNumber()) - kept.blockNumber);
  await anvil.reorg(depth);
  await anvil.mine(100);
  const finalized = await anvil.client.getBlock({ blockTag: 'finalized' });
  expect(finalized.number).toBeGreaterThan(dropped.blockNumber);

  run = startIngest({ db, chain, http: [anvil.rpcUrl] });
  await waitProcessed(db.store, chain, await anvil.blockNumber());
  const rows = await transfers(db.store, chain);
  expect(rows.find((row) => row.tx_hash === dropped.transactionHash)?.status).toBe('removed');
  expect(rows.find((row) => row.tx_hash === kept.transactionHash)?.status).toBe('observed');
  const { rows: reorgs } = await db.store.query<{ depth: number; beyond_rule: string | null }>('SELECT depth, beyond_rule FROM chain_reorgs WHERE chain = $1', [
    chain,
  ]);
  expect(reorgs).toEqual([{ depth, beyond_rule: null }]);
  // Nothing the gateway reported final was on the lost branch: a reorg, not a finality incident.
  await waitFor(async () => (await metricValue(run!.metrics, 'svc_ingest_reorgs_total', { chain })) === 1);
  expect(await metricValue(run.metrics, 'svc_ingest_deep_reorgs_total', { chain, rule: 'finalized' })).toBe(0);
}, 60_000);

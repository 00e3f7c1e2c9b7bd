import { afterAll, beforeAll, expect, test } from 'vitest';
import { getAddress, numberToHex, pad, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { mintMany } from '../../helpers/batchMinter.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitProcessed } from '../../helpers/evmIngest.ts';
import { loadChains } from '../../../src/internal/chains.ts';

// A dense backfill (1,000 watched transfers a block, about 630 KB of eth_getLogs answer a block):
// the chain's first range at its configured size (2,000 blocks) would be a 15 MB answer here,
// which anvil builds in full before viem refuses it (over its 10 MB limit). The ingester first
// reads one small range alone and sizes the next ones by its densest block, so no range is refused.
const db = useTestDatabase('ingest_dense_backfill');
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const PER_BLOCK = 1_000;
const BLOCKS = 24;
let anvil: Anvil;
let run: ReturnType<typeof startIngest> | undefined;

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await anvil.client.request({ method: 'evm_setBlockGasLimit' as never, params: [numberToHex(BigInt(PER_BLOCK) * 60_000n + 10_000_000n)] as never });
}, 60_000);

afterAll(async () => {
  await run?.ingest.stop();
  await anvil?.stop();
});

test('a dense backfill asks for no range the answer limit refuses, and stores every transfer once', async () => {
  const wallets = Array.from({ length: 10 }, (_, i) => getAddress(pad(numberToHex(0x9000 + i), { size: 20 })));
  await merchantWithWallets(db.store, chain, wallets);
  const start = await anvil.blockNumber();
  await mintMany(anvil, { token: usdc, recipients: wallets, count: PER_BLOCK * BLOCKS, firstAmount: 1n, perTx: PER_BLOCK });
  const head = await anvil.blockNumber();

  run = startIngest({ db, chain, http: [anvil.rpcUrl], backfillBlocks: Number(head - start) + 1 });
  await waitProcessed(db.store, chain, head, 60_000);

  const rows = await transfers(db.store, chain);
  expect(rows).toHaveLength(PER_BLOCK * BLOCKS);
  expect(new Set(rows.map((row) => `${row.tx_hash}:${row.log_index}`)).size).toBe(PER_BLOCK * BLOCKS);
  expect(await metricValue(run.metrics, 'svc_ingest_rpc_errors_total', { chain, method: 'eth_getLogs', kind: 'range' })).toBe(0);
}, 90_000);

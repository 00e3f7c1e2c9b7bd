import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { addWallet } from '../../../src/accounts/index.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitFor, waitProcessed } from '../../helpers/evmIngest.ts';

const db = useTestDatabase('ingest_transfers');
const chains = loadChains();

const WATCHED = getAddress('0x1111111111111111111111111111111111111111');
const UNWATCHED = getAddress('0x2222222222222222222222222222222222222222');
const LATER = getAddress('0x3333333333333333333333333333333333333333');

describe.each([
  { chain: 'polygon' as const, decimals: 6 },
  { chain: 'bsc' as const, decimals: 18 },
])('$chain ingest', ({ chain, decimals }) => {
  let anvil: Anvil;
  let run: ReturnType<typeof startIngest>;
  const usdc = chains[chain].tokens.find((token) => token.currency === 'USDC')!.address as Address;
  const usdt = chains[chain].tokens.find((token) => token.currency === 'USDT' && token.acceptedByDefault)!.address as Address;

  beforeAll(async () => {
    anvil = await startAnvil({ chain });
    await anvil.installChainTokens();
    await merchantWithWallets(db.store, chain, [WATCHED]);
    run = startIngest({ db, chain, http: [anvil.rpcUrl] });
    // First start begins at the head (backfillBlocks 0): pay only once the checkpoint exists.
    await waitProcessed(db.store, chain, await anvil.blockNumber());
  });
  afterAll(async () => {
    await run?.ingest.stop();
    await anvil?.stop();
  });

  test(`stores a transfer to a watched wallet with its amount in base units (${decimals} decimals), not one to an unwatched address`, async () => {
    const amount = 12_345_678n * 10n ** BigInt(decimals - 6) + 9n; // 12.345678…09 in the token's own decimals
    const paid = await anvil.pay(usdc, WATCHED, amount);
    const other = await anvil.pay(usdt, UNWATCHED, 5n * 10n ** BigInt(decimals));
    await anvil.waitMined(other);
    const receipt = await anvil.waitMined(paid);
    await waitProcessed(db.store, chain, await anvil.blockNumber());

    const rows = await transfers(db.store, chain);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      livemode: true,
      tx_hash: paid,
      block_number: receipt.blockNumber,
      block_hash: receipt.blockHash,
      token_address: usdc,
      to_address: WATCHED,
      amount: amount.toString(),
      status: 'observed',
    });
    expect(await metricValue(run.metrics, 'svc_ingest_transfers_total', { chain })).toBe(1);
    expect(run.changes.some((change) => change.kind === 'transfers' && change.chain === chain && change.livemode)).toBe(true);
    const head = await db.store.query<{ head_block: bigint; processed_block: bigint; finalized_block: bigint }>(
      'SELECT head_block, processed_block, finalized_block FROM chain_heads WHERE chain = $1',
      [chain],
    );
    expect(head.rows[0]!.processed_block).toBe(head.rows[0]!.head_block);
    const text = await run.metrics.metrics();
    for (const name of [
      'svc_ingest_head_block',
      'svc_ingest_processed_block',
      'svc_ingest_safe_block',
      'svc_ingest_finalized_block',
      'svc_ingest_seconds_since_head',
      'svc_ingest_leader',
    ]) {
      expect(text).toMatch(new RegExp(`^${name}\\{chain="${chain}"\\} \\d`, 'm'));
    }
    expect(text).toMatch(
      new RegExp(`^svc_ingest_rpc_request_duration_seconds_count\\{chain="${chain}",method="eth_getLogs",endpoint="0:127.0.0.1:\\d+"\\} [1-9]`, 'm'),
    );
    expect(await metricValue(run.metrics, 'svc_ingest_leader', { chain })).toBe(1);
  });

  test('at the head, blocks whose logsBloom rules out a watched transfer cost no eth_getLogs', async () => {
    const getLogs = () => metricValue(run.metrics, 'svc_ingest_rpc_request_duration_seconds_count', { chain, method: 'eth_getLogs' });
    const getBlocks = () => metricValue(run.metrics, 'svc_ingest_rpc_request_duration_seconds_count', { chain, method: 'eth_getBlockByNumber' });
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    const [logsBefore, blocksBefore] = [await getLogs(), await getBlocks()];
    // Empty blocks, then a block with a USDT transfer to an unwatched address (token and topic in its bloom, recipient not).
    await anvil.mine(3);
    await anvil.waitMined(await anvil.pay(usdt, UNWATCHED, 10n ** BigInt(decimals)));
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    expect(await getBlocks()).toBeGreaterThan(blocksBefore);
    expect(await getLogs()).toBe(logsBefore);
    expect((await transfers(db.store, chain)).filter((row) => row.to_address === UNWATCHED)).toEqual([]);
  });

  test('a wallet added while running is watched from the next block without restart', async () => {
    const merchant = await db.store.query<{ id: string }>('SELECT id FROM merchants LIMIT 1');
    await addWallet(db.store, { merchantId: merchant.rows[0]!.id, chain, address: LATER, verifiedBy: 'operator' });
    const paid = await anvil.pay(usdt, LATER, 7n * 10n ** BigInt(decimals));
    await anvil.waitMined(paid);
    const row = await waitFor(async () => (await transfers(db.store, chain)).find((transfer) => transfer.tx_hash === paid), 20_000, 'the new wallet transfer');
    expect(row).toMatchObject({ to_address: LATER, token_address: usdt, amount: (7n * 10n ** BigInt(decimals)).toString() });
  });

  test('re-ingesting blocks already stored (checkpoint moved back, new process) changes no row', async () => {
    const before = await db.store.query<{ id: bigint; xmin: string }>('SELECT id, xmin::text FROM transfers WHERE chain = $1 ORDER BY id', [chain]);
    expect(before.rows.length).toBeGreaterThan(0);
    await run.ingest.stop();
    const first = await db.store.query<{ n: bigint }>('SELECT min(block_number) AS n FROM transfers WHERE chain = $1', [chain]);
    await db.store.query('UPDATE chain_heads SET processed_block = $2 WHERE chain = $1', [chain, first.rows[0]!.n - 1n]);
    run = startIngest({ db, chain, http: [anvil.rpcUrl] });
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    await waitFor(() => run.logs.find((line) => line.msg === 'Resuming from checkpoint'));
    const after = await db.store.query<{ id: bigint; xmin: string }>('SELECT id, xmin::text FROM transfers WHERE chain = $1 ORDER BY id', [chain]);
    expect(after.rows).toEqual(before.rows);
  });
});

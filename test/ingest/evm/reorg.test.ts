import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil, tokenAbi, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitFor, waitProcessed } from '../../helpers/evmIngest.ts';

const db = useTestDatabase('ingest_reorg');
const chain = 'polygon' as const;
const usdc = loadChains()[chain].tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const WALLET = getAddress('0x4444444444444444444444444444444444444444');
/** A real key made for this run, so a signed transaction can be replayed with the same hash. */
const payer = privateKeyToAccount(generatePrivateKey());

let anvil: Anvil;
let run: ReturnType<typeof startIngest>;

async function signedTransfer(amount: bigint): Promise<`0x${string}`> {
  const request = await anvil.client.prepareTransactionRequest({
    account: payer,
    chain: anvil.client.chain,
    to: usdc,
    data: (await import('viem')).encodeFunctionData({ abi: tokenAbi, functionName: 'transfer', args: [WALLET, amount] }),
  });
  return payer.signTransaction(request as never);
}

async function reorgsOf(): Promise<{ depth: number; beyond_rule: string | null; removed_transfers: number }[]> {
  const { rows } = await db.store.query('SELECT depth, beyond_rule, removed_transfers FROM chain_reorgs WHERE chain = $1 ORDER BY id', [chain]);
  return rows as never;
}

beforeAll(async () => {
  anvil = await startAnvil({ chain });
  await anvil.installChainTokens();
  await anvil.client.setBalance({ address: payer.address, value: 10n ** 20n });
  await anvil.waitMined(await anvil.mint(usdc, payer.address, 10n ** 12n));
  await merchantWithWallets(db.store, chain, [WALLET]);
  run = startIngest({ db, chain, http: [anvil.rpcUrl] });
  await waitProcessed(db.store, chain, await anvil.blockNumber());
});
afterAll(async () => {
  await run?.ingest.stop();
  await anvil?.stop();
});

describe('reorgs on anvil (polygon, chain id 137)', () => {
  let before: number;
  beforeEach(async () => {
    before = (await reorgsOf()).length;
  });

  test('anvil_reorg that drops a transfer marks it removed and tells the engine', async () => {
    const paid = await anvil.pay(usdc, WALLET, 1_000_000n);
    const receipt = await anvil.waitMined(paid);
    await anvil.mine(2);
    await waitProcessed(db.store, chain, receipt.blockNumber + 2n);
    expect((await transfers(db.store, chain)).find((row) => row.tx_hash === paid)?.status).toBe('observed');

    await anvil.reorg(3);
    const row = await waitFor(async () => {
      const found = (await transfers(db.store, chain)).find((transfer) => transfer.tx_hash === paid);
      return found?.status === 'removed' ? found : undefined;
    });
    expect(row.removed_at).toBeInstanceOf(Date);
    expect(run.changes.some((change) => change.kind === 'reorg')).toBe(true);
    const reorgs = await reorgsOf();
    expect(reorgs.slice(before)).toEqual([{ depth: 3, beyond_rule: null, removed_transfers: 1 }]);
    const stored = await db.store.query<{ hash: string }>('SELECT hash FROM chain_blocks WHERE chain = $1 AND number = $2', [chain, receipt.blockNumber]);
    const canonical = await anvil.client.getBlock({ blockNumber: receipt.blockNumber });
    expect(stored.rows[0]?.hash).toBe(canonical.hash);
  });

  test('a reorg that moves a transfer to another block keeps it once, observed, in its new block', async () => {
    const raw = await signedTransfer(2_500_000n);
    const snapshot = await anvil.snapshot();
    const hash = await anvil.client.sendRawTransaction({ serializedTransaction: raw });
    const first = await anvil.waitMined(hash);
    await waitProcessed(db.store, chain, first.blockNumber);
    expect((await transfers(db.store, chain)).filter((row) => row.tx_hash === hash)).toMatchObject([{ block_number: first.blockNumber, status: 'observed' }]);

    await anvil.revert(snapshot);
    await anvil.mine(2);
    expect(await anvil.client.sendRawTransaction({ serializedTransaction: raw })).toBe(hash);
    const second = await anvil.waitMined(hash);
    expect(second.blockNumber).toBe(first.blockNumber + 2n);
    await anvil.mine(1);

    const rows = await waitFor(async () => {
      const found = (await transfers(db.store, chain)).filter((row) => row.tx_hash === hash);
      return found.length === 1 && found[0]!.block_number === second.blockNumber ? found : undefined;
    });
    expect(rows).toMatchObject([{ status: 'observed', removed_at: null, block_hash: second.blockHash, amount: '2500000', to_address: WALLET }]);
    expect((await reorgsOf()).slice(before)).toHaveLength(1);
  });

  test("a reorg deeper than the chain's confirmation depth (32 on polygon) raises the alert metric and logs an error", async () => {
    const paid = await anvil.pay(usdc, WALLET, 3_000_000n);
    await anvil.waitMined(paid);
    await anvil.mine(40);
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    expect(await metricValue(run.metrics, 'svc_ingest_deep_reorgs_total', { chain, rule: 'confirmed' })).toBe(0);

    await anvil.reorg(45);
    await waitFor(async () => (await metricValue(run.metrics, 'svc_ingest_deep_reorgs_total', { chain, rule: 'confirmed' })) === 1);
    expect(run.logs.find((line) => line.level === 'error' && line.msg === "Reorg deeper than the chain's confirmation depth")).toMatchObject({
      chain,
      reorg_depth: 45,
      confirmation_depth: 32,
    });
    const row = await waitFor(async () => (await transfers(db.store, chain)).find((transfer) => transfer.tx_hash === paid && transfer.status === 'removed'));
    expect(row.status).toBe('removed');
    expect(await waitFor(async () => ((await reorgsOf()).length > before ? (await reorgsOf()).slice(before) : undefined))).toMatchObject([
      { depth: 45, beyond_rule: 'confirmed' },
    ]);
    // Blocks at or below finalized are pruned from the hash-linked list (the newest one is kept to link the next).
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    const pruned = await db.store.query<{ at_or_below: bigint; above: bigint }>(
      `SELECT count(*) FILTER (WHERE b.number <= h.finalized_block) AS at_or_below, count(*) FILTER (WHERE b.number > h.finalized_block) AS above
       FROM chain_blocks b JOIN chain_heads h USING (livemode, chain) WHERE b.chain = $1`,
      [chain],
    );
    expect(pruned.rows[0]!.at_or_below).toBeLessThanOrEqual(1n);
    expect(pruned.rows[0]!.above).toBeGreaterThan(0n);
  });

  test('a reorg below the finalized block raises the finalized alert', async () => {
    await anvil.mine(80);
    const head = await anvil.blockNumber();
    await waitProcessed(db.store, chain, head);
    // Below what the gateway recorded final: the alert is about money it reported `settled`.
    await waitFor(async () => {
      const { rows } = await db.store.query<{ finalized_block: bigint }>('SELECT finalized_block FROM chain_heads WHERE livemode AND chain = $1', [chain]);
      return rows[0]!.finalized_block > head - 70n;
    });
    await anvil.reorg(70);
    await waitFor(async () => (await metricValue(run.metrics, 'svc_ingest_deep_reorgs_total', { chain, rule: 'finalized' })) === 1);
    expect(run.logs.find((line) => line.level === 'error' && String(line.msg).startsWith('Reorg reaches below the finalized block'))).toBeDefined();
    // The metric moves when the reorg is found; its row commits with the new branch.
    const recorded = await waitFor(async () => ((await reorgsOf()).length > before ? (await reorgsOf()).slice(before) : undefined));
    expect(recorded).toMatchObject([{ beyond_rule: 'finalized' }]);
    // Handled once: the ingester is past it, not looping on it.
    await waitProcessed(db.store, chain, await anvil.blockNumber());
    expect(await metricValue(run.metrics, 'svc_ingest_deep_reorgs_total', { chain, rule: 'finalized' })).toBe(1);
  });
});

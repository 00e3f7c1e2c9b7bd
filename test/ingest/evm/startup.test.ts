import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { freePort, startAnvil, type Anvil } from '../../helpers/anvil.ts';
import { useTestDatabase } from '../../helpers/db.ts';
import { loadChains } from '../../../src/internal/chains.ts';
import { merchantWithWallets, metricValue, startIngest, transfers, waitFor, waitProcessed } from '../../helpers/evmIngest.ts';

const db = useTestDatabase('ingest_startup');
const chains = loadChains();
const WALLET = getAddress('0x5555555555555555555555555555555555555555');

describe('start-up checks and failover', () => {
  let anvil: Anvil | undefined;
  let run: ReturnType<typeof startIngest> | undefined;
  beforeAll(async () => {
    await merchantWithWallets(db.store, 'polygon', [WALLET]);
    await merchantWithWallets(db.store, 'optimism', [WALLET]);
  });
  afterEach(async () => {
    await run?.ingest.stop();
    await anvil?.stop();
    run = undefined;
    anvil = undefined;
  });

  test('an RPC URL on the wrong chain id: the ingester refuses to start and says which', async () => {
    anvil = await startAnvil({ chain: 'base' });
    run = startIngest({ db, chain: 'polygon', http: [anvil.rpcUrl] });
    const status = await waitFor(() => (run!.ingest.status().polygon?.state === 'refused' ? run!.ingest.status().polygon : undefined));
    expect(status).toEqual({
      state: 'refused',
      error:
        'polygon: RPC endpoint 0:127.0.0.1:' +
        new URL(anvil.rpcUrl).port +
        ' reports chain id 8453, but chains/polygon.json says 137; the polygon ingester refuses to start',
    });
    expect(run.logs.find((line) => line.level === 'error' && String(line.msg).includes('reports chain id 8453'))).toBeDefined();
    expect(await db.store.query("SELECT 1 FROM chain_heads WHERE chain = 'polygon'")).toMatchObject({ rowCount: 0 });
  });

  test('a token whose decimals() differs from the config: the ingester refuses to start and names the token', async () => {
    anvil = await startAnvil({ chain: 'polygon' });
    await anvil.installChainTokens();
    const usdt = chains.polygon.tokens.find((token) => token.symbol === 'USDT')!;
    await anvil.installToken(usdt.address as Address, 18);
    run = startIngest({ db, chain: 'polygon', http: [anvil.rpcUrl] });
    const status = await waitFor(() => (run!.ingest.status().polygon?.state === 'refused' ? run!.ingest.status().polygon : undefined));
    expect(status).toEqual({
      state: 'refused',
      error: `polygon: token USDT at ${usdt.address} has decimals() = 18, but chains/polygon.json says 6; the polygon ingester refuses to start`,
    });
  });

  test('a dead first RPC URL is skipped: the second one serves, and the dead one is counted', async () => {
    anvil = await startAnvil({ chain: 'optimism' });
    await anvil.installChainTokens();
    const dead = `http://127.0.0.1:${await freePort()}`;
    run = startIngest({ db, chain: 'optimism', http: [dead, anvil.rpcUrl] });
    await waitProcessed(db.store, 'optimism', await anvil.blockNumber());
    const usdt0 = chains.optimism.tokens.find((token) => token.symbol === 'USDT0')!.address as Address;
    const paid = await anvil.pay(usdt0, WALLET, 4_200_000n);
    await anvil.waitMined(paid);
    const row = await waitFor(async () => (await transfers(db.store, 'optimism')).find((transfer) => transfer.tx_hash === paid));
    expect(row).toMatchObject({ amount: '4200000', token_address: usdt0 });
    const deadLabel = `0:${new URL(dead).host}`;
    expect(await metricValue(run.metrics, 'svc_ingest_rpc_errors_total', { chain: 'optimism', endpoint: deadLabel, kind: 'endpoint' })).toBeGreaterThan(0);
    expect(run.ingest.status().optimism).toEqual({ state: 'leader' });
  });

  test('a dead WebSocket URL: the ingester polls over HTTP and keeps retrying the subscription with backoff', async () => {
    anvil = await startAnvil({ chain: 'polygon' });
    await anvil.installChainTokens();
    run = startIngest({ db, chain: 'polygon', http: [anvil.rpcUrl], ws: [`ws://127.0.0.1:${await freePort()}`] });
    await waitFor(() => run!.logs.lines.filter((line) => line.msg === 'newHeads subscription failed').length >= 2, 20_000, 'two subscription attempts');
    const usdc = chains.polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
    const paid = await anvil.pay(usdc, WALLET, 2_500_000n);
    await anvil.waitMined(paid);
    const row = await waitFor(async () => (await transfers(db.store, 'polygon')).find((transfer) => transfer.tx_hash === paid));
    expect(row.amount).toBe('2500000');
  });

  test('with a WebSocket URL the ingester follows newHeads and still stores transfers', async () => {
    anvil = await startAnvil({ chain: 'polygon' });
    await anvil.installChainTokens();
    run = startIngest({ db, chain: 'polygon', http: [anvil.rpcUrl], ws: [anvil.rpcUrl.replace('http', 'ws')] });
    await waitProcessed(db.store, 'polygon', await anvil.blockNumber());
    await waitFor(() => run!.logs.find((line) => line.msg === 'Subscribed to newHeads'));
    const usdc = chains.polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
    const paid = await anvil.pay(usdc, WALLET, 1_500_000n);
    await anvil.waitMined(paid);
    const row = await waitFor(async () => (await transfers(db.store, 'polygon')).find((transfer) => transfer.tx_hash === paid));
    expect(row.amount).toBe('1500000');
  });
});

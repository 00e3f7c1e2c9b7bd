import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPublicClient, http, parseAbiItem, type Address } from 'viem';
import { startAnvil, PAYER, type Anvil } from '../helpers/anvil.ts';
import { loadChains } from '../../src/internal/chains.ts';
import { compileTestToken } from '../contracts/build.ts';
import { testToken } from '../helpers/anvil.ts';

const MERCHANT: Address = '0x52908400098527886E0F7030069857D2E4169EE7';
const polygonUsdc = loadChains().polygon.tokens.find((token) => token.symbol === 'USDC')!.address as Address;
const bscUsdt = loadChains().bsc.tokens.find((token) => token.symbol === 'USDT')!.address as Address;

describe('anvil helper', () => {
  let anvil: Anvil;
  beforeAll(async () => {
    anvil = await startAnvil({ chain: 'polygon' });
    await anvil.installChainTokens();
  });
  afterAll(() => anvil?.stop());

  test('a transfer to a merchant at the real polygon USDC address is visible through viem on chain id 137', async () => {
    const client = createPublicClient({ transport: http(anvil.rpcUrl) });
    expect(await client.getChainId()).toBe(137);
    expect(await client.readContract({ address: polygonUsdc, abi: [parseAbiItem('function decimals() view returns (uint8)')], functionName: 'decimals' })).toBe(
      6,
    );

    const receipt = await anvil.waitMined(await anvil.pay(polygonUsdc, MERCHANT, 12_500_000n));
    expect(receipt.status).toBe('success');
    const logs = await client.getLogs({
      address: polygonUsdc,
      event: parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)'),
      args: { to: MERCHANT },
      fromBlock: 0n,
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]!.args).toEqual({ from: PAYER, to: MERCHANT, value: 12_500_000n });
    expect(logs[0]!.transactionHash).toBe(receipt.transactionHash);
    expect(await anvil.balanceOf(polygonUsdc, MERCHANT)).toBe(12_500_000n);
  });

  test('mine, snapshot / revert and reorg move the chain as tests need', async () => {
    const start = await anvil.blockNumber();
    await anvil.mine(5);
    expect(await anvil.blockNumber()).toBe(start + 5n);

    const snapshot = await anvil.snapshot();
    await anvil.waitMined(await anvil.pay(polygonUsdc, MERCHANT, 1n));
    const paid = await anvil.balanceOf(polygonUsdc, MERCHANT);
    await anvil.revert(snapshot);
    expect(await anvil.balanceOf(polygonUsdc, MERCHANT)).toBe(paid - 1n);

    const receipt = await anvil.waitMined(await anvil.pay(polygonUsdc, MERCHANT, 7n));
    const height = await anvil.blockNumber();
    const before = await anvil.client.getBlock({ blockNumber: receipt.blockNumber });
    await anvil.reorg(1);
    expect(await anvil.blockNumber()).toBe(height);
    const after = await anvil.client.getBlock({ blockNumber: receipt.blockNumber });
    expect(after.hash).not.toBe(before.hash);
    expect(await anvil.balanceOf(polygonUsdc, MERCHANT)).toBe(paid - 1n);
  });

  test('a reorg of empty blocks still replaces them, and is in place when reorg() returns', async () => {
    // anvil may answer anvil_reorg before its blocks are built, and may rebuild an empty block
    // with the same hash: the helper's wait and its marker transaction make each reorg real and
    // in place when it returns (mutation: either removed fails here).
    // Two blocks mined, the last replaced: in a probe, a bare anvil_reorg followed at once by
    // evm_setTime left the block as it was 20 times in 20 (the reorg's blocks were built after
    // the clock went back), and 2 in 10 when waited for.
    for (let round = 0; round < 20; round++) {
      await anvil.mine(2);
      const height = await anvil.blockNumber();
      const depth = 1;
      const before = await anvil.client.getBlock({ blockNumber: height - BigInt(depth) + 1n });
      await anvil.reorg(depth);
      expect(await anvil.blockNumber()).toBe(height);
      const after = await anvil.client.getBlock({ blockNumber: height - BigInt(depth) + 1n });
      expect(after.hash).not.toBe(before.hash);
    }
  });

  test('after a reorg the chain’s clock goes on from where it was, not back by the replaced blocks’ span', async () => {
    await anvil.mine(3);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    await anvil.mine(1);
    const head = await anvil.client.getBlock({ blockTag: 'latest' });
    await anvil.reorg(3);
    await anvil.mine(1);
    const next = await anvil.client.getBlock({ blockTag: 'latest' });
    // Bare anvil_reorg leaves the next block about 3 s behind the lost head (the span it replaced).
    expect(next.timestamp).toBeGreaterThanOrEqual(head.timestamp);
    // Near the wall clock: 3 s of slack for the RPC round trips since evm_setTime on a loaded
    // machine (1 s, less the rounding to whole seconds, was within one stalled call); the bare
    // reorg’s lag is caught by the line above (mutation: no evm_setTime in anvil.ts reorg()).
    expect(Number(next.timestamp)).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) - 3);
  });

  test('18-decimal tokens on a chain-id-56 anvil (bsc)', async () => {
    const bsc = await startAnvil({ chain: 'bsc', automine: false });
    try {
      await bsc.installChainTokens();
      const receipt = await bsc.waitMined(await bsc.pay(bscUsdt, MERCHANT, 5n * 10n ** 18n));
      expect(receipt.status).toBe('success');
      expect(await bsc.client.getChainId()).toBe(56);
      expect(await bsc.balanceOf(bscUsdt, MERCHANT)).toBe(5n * 10n ** 18n);
    } finally {
      await bsc.stop();
    }
  });

  test('the committed TestToken artifact is what TestToken.sol compiles to', () => {
    expect(compileTestToken().deployedBytecode).toBe(testToken.deployedBytecode);
  });
});

import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startAnvil, type Anvil } from '../helpers/anvil.ts';
import { deployFactoryOnAnvil, factoryAbi } from '../helpers/deposits.ts';
import {
  computeDepositAddress,
  DEPOSIT_FACTORY_ADDRESS,
  DEPOSIT_FORWARDER_IMPLEMENTATION,
  DETERMINISTIC_DEPLOYER,
  depositSalt,
} from '../../src/internal/depositAddress.ts';
import { depositFactoryArtifact, depositForwarderArtifact } from '../../src/internal/depositArtifacts.ts';

/**
 * Deposit addresses as computed offline (src/internal/depositAddress.ts) are where the real factory,
 * deployed through the deterministic deployment proxy on anvil, puts the forwarders.
 */
let anvil: Anvil;
const merchant: Address = '0x000000000000000000000000000000000000bEEF';

/** The runtime code with its one address immutable (zero-filled PUSH32 operands in the artifact) set to `value`. */
function withImmutable(code: string, value: Address): string {
  return code.replaceAll(`7f${'0'.repeat(64)}`, `7f${value.slice(2).toLowerCase().padStart(64, '0')}`);
}

beforeAll(async () => {
  anvil = await startAnvil({ chain: 'base' });
  await deployFactoryOnAnvil(anvil);
});
afterAll(() => anvil?.stop());

describe('deposit addresses', () => {
  test('the factory address is pinned: changing the contracts or settings moves every deposit address', () => {
    // If this fails, the contracts changed: every deposit address changes with them, and
    // deposits made to the old ones need the old factory. See docs/deposit-addresses.md.
    expect(DEPOSIT_FACTORY_ADDRESS).toBe('0xB2677750B8467d4e2Ff11Dd8d808b5d1d741dd9c');
  });

  test('the deterministic deployment proxy is present from block 0, and the factory lands at DEPOSIT_FACTORY_ADDRESS', async () => {
    expect(await anvil.client.getCode({ address: DETERMINISTIC_DEPLOYER, blockNumber: 0n })).toBeTruthy();
    expect(await anvil.client.getCode({ address: DEPOSIT_FACTORY_ADDRESS })).toBe(
      withImmutable(depositFactoryArtifact.deployedBytecode, DEPOSIT_FORWARDER_IMPLEMENTATION),
    );
  });

  test('the implementation is the factory constructor’s CREATE, with the committed runtime (its SELF immutable filled in)', async () => {
    const implementation = await anvil.client.readContract({ address: DEPOSIT_FACTORY_ADDRESS, abi: factoryAbi, functionName: 'implementation' });
    expect(implementation).toBe(DEPOSIT_FORWARDER_IMPLEMENTATION);
    const code = await anvil.client.getCode({ address: DEPOSIT_FORWARDER_IMPLEMENTATION });
    expect(code).toBe(withImmutable(depositForwarderArtifact.deployedBytecode, DEPOSIT_FORWARDER_IMPLEMENTATION));
  });

  test('computeDepositAddress equals the factory’s forwarderAddress, for many sessions and wallets', async () => {
    const wallets: Address[] = [merchant, '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', getAddress('0xffffffffffffffffffffffffffffffffffffffff')];
    for (const wallet of wallets) {
      for (const sessionId of ['ps_1', 'ps_01HZY5Q8W1', 'é✓ unicode id', '']) {
        const onChain = await anvil.client.readContract({
          address: DEPOSIT_FACTORY_ADDRESS,
          abi: factoryAbi,
          functionName: 'forwarderAddress',
          args: [wallet, depositSalt(sessionId)],
        });
        expect(computeDepositAddress({ merchantWallet: wallet, sessionId })).toBe(onChain);
      }
    }
  });

  test('different sessions and different wallets give different addresses; the address is checksummed', () => {
    const a = computeDepositAddress({ merchantWallet: merchant, sessionId: 'ps_1' });
    expect(a).toBe(getAddress(a));
    expect(computeDepositAddress({ merchantWallet: merchant, sessionId: 'ps_2' })).not.toBe(a);
    expect(computeDepositAddress({ merchantWallet: '0x000000000000000000000000000000000000bEEe', sessionId: 'ps_1' })).not.toBe(a);
    expect(computeDepositAddress({ merchantWallet: merchant.toLowerCase() as Address, sessionId: 'ps_1' })).toBe(a);
  });
});

describe('deploy and flush', () => {
  test('a payment to a computed address, before any code is there, reaches the merchant wallet through deployAndFlush', async () => {
    const usdc: Address = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
    await anvil.installToken(usdc, 6);
    const sessionId = 'ps_smoke';
    const deposit = computeDepositAddress({ merchantWallet: merchant, sessionId });
    await anvil.waitMined(await anvil.pay(usdc, deposit, 12_345_678n));
    expect(await anvil.client.getCode({ address: deposit })).toBeUndefined();
    const [account] = await anvil.client.getAddresses();
    const hash = await anvil.client.writeContract({
      account: account!,
      chain: anvil.client.chain,
      address: DEPOSIT_FACTORY_ADDRESS,
      abi: factoryAbi,
      functionName: 'deployAndFlush',
      args: [merchant, depositSalt(sessionId), [usdc]],
    });
    expect((await anvil.waitMined(hash)).status).toBe('success');
    expect(await anvil.balanceOf(usdc, merchant)).toBe(12_345_678n);
    expect(await anvil.balanceOf(usdc, deposit)).toBe(0n);
  });
});

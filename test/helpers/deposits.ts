import type { Address, Hex } from 'viem';
import { DEPOSIT_FACTORY_ADDRESS, DEPOSIT_FACTORY_DEPLOY_DATA, DETERMINISTIC_DEPLOYER } from '../../src/internal/depositAddress.ts';
import { depositFactoryArtifact } from '../../src/internal/depositArtifacts.ts';
import { createDepositSender, type DepositSender } from '../../src/deposits/sender.ts';
import { createRpc } from '../../src/ingest/evm/rpc.ts';
import { createIngestMetrics } from '../../src/ingest/metrics.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { PAYER, type Anvil, type EvmChainName } from './anvil.ts';

/** The factory's ABI, from the committed artifact. */
export const factoryAbi = depositFactoryArtifact.abi;

/**
 * Deploys the deposit factory on `anvil` the way production does: a transaction to the
 * deterministic deployment proxy carrying salt ++ creation code (sent by an impersonated,
 * funded account). Returns the address the factory's code landed at.
 */
export async function deployFactoryOnAnvil(anvil: Anvil, from: Address = PAYER): Promise<Address> {
  await anvil.client.impersonateAccount({ address: from });
  await anvil.client.setBalance({ address: from, value: 10n ** 20n });
  try {
    const hash = await anvil.client.sendTransaction({
      account: from,
      chain: anvil.client.chain,
      to: DETERMINISTIC_DEPLOYER,
      data: DEPOSIT_FACTORY_DEPLOY_DATA,
    });
    const receipt = await anvil.waitMined(hash);
    if (receipt.status !== 'success') throw new Error('factory deployment reverted');
  } finally {
    await anvil.client.stopImpersonatingAccount({ address: from });
  }
  return DEPOSIT_FACTORY_ADDRESS;
}

/** Sends `data` to `to` from an impersonated, funded `from`; returns the hash (mined with `waitMined`). */
export async function sendAs(anvil: Anvil, from: Address, to: Address, data: Hex, value = 0n): Promise<Hex> {
  await anvil.client.impersonateAccount({ address: from });
  await anvil.client.setBalance({ address: from, value: 10n ** 20n + value });
  try {
    return await anvil.client.sendTransaction({ account: from, chain: anvil.client.chain, to, data, value, gas: 5_000_000n });
  } finally {
    await anvil.client.stopImpersonatingAccount({ address: from });
  }
}

/** A deposit sender (the gateway's relayer side) on `anvil` with `key`, over the production RPC pool. */
export function depositSenderOn(anvil: Anvil, chain: EvmChainName, key: Hex): { sender: DepositSender; close: () => Promise<void> } {
  const rpc = createRpc({
    chain,
    urls: [anvil.rpcUrl],
    logger: createLogger({ level: 'silent' }),
    metrics: createIngestMetrics(createMetricsRegistry({ defaultMetrics: false })),
  });
  return { sender: createDepositSender({ chain, chainId: anvil.chainId, key, rpc }), close: () => rpc.close() };
}

/** Mines a block every `ms` until stopped: for code that waits for receipts on a no-automine anvil. */
export function mineEvery(anvil: Anvil, ms = 100): { stop: () => void } {
  const timer = setInterval(() => void anvil.mine(1).catch(() => {}), ms);
  return { stop: () => clearInterval(timer) };
}

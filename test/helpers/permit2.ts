import { getAddress, maxUint256, type Address, type LocalAccount } from 'viem';
import { DETERMINISTIC_DEPLOYER } from '../../src/internal/depositAddress.ts';
import { deployData, permit2Deployment, proxyDeployment } from '../../src/x402/permit2/contracts.ts';
import { PAYER, tokenAbi, type Anvil } from './anvil.ts';

const approveAbi = [
  {
    type: 'function',
    name: 'approve',
    stateMutability: 'nonpayable',
    inputs: [
      { name: 'spender', type: 'address' },
      { name: 'amount', type: 'uint256' },
    ],
    outputs: [{ type: 'bool' }],
  },
] as const;

/**
 * Deploys the canonical Permit2 and x402's exact Permit2 proxy on `anvil` as they are deployed on
 * mainnets: transactions to the deterministic deployment proxy carrying salt ++ the committed init
 * code (contracts/x402/*.json). Throws unless each lands at its canonical address.
 */
export async function deployPermit2OnAnvil(anvil: Anvil): Promise<void> {
  await anvil.client.impersonateAccount({ address: PAYER });
  await anvil.client.setBalance({ address: PAYER, value: 10n ** 20n });
  try {
    for (const deployment of [permit2Deployment, proxyDeployment]) {
      const hash = await anvil.client.sendTransaction({ account: PAYER, chain: anvil.client.chain, to: DETERMINISTIC_DEPLOYER, data: deployData(deployment) });
      const receipt = await anvil.waitMined(hash);
      const code = await anvil.client.getCode({ address: deployment.address });
      if (receipt.status !== 'success' || !code || code === '0x') throw new Error(`${deployment.contractName} did not land at ${deployment.address}`);
    }
  } finally {
    await anvil.client.stopImpersonatingAccount({ address: PAYER });
  }
}

/** The payer's one-time approval of Permit2 for `token` (it pays its own gas: funded here). */
export async function approvePermit2(anvil: Anvil, payer: LocalAccount, token: Address, amount: bigint = maxUint256): Promise<void> {
  await anvil.client.setBalance({ address: payer.address, value: 10n ** 18n });
  const hash = await anvil.client.writeContract({
    account: payer,
    chain: anvil.client.chain,
    address: getAddress(token),
    abi: approveAbi,
    functionName: 'approve',
    args: [permit2Deployment.address, amount],
  });
  await anvil.waitMined(hash);
}

export { tokenAbi };

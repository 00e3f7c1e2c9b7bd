import type { Hex } from 'viem';
import type { Store } from '../store/index.ts';
import { NonRetryableError, UnavailableError } from '../internal/errors.ts';
import { sleep } from '../internal/shutdown.ts';
import { withRelayerLock } from '../store/relayerLock.ts';
import { DEPOSIT_FACTORY_ADDRESS, DEPOSIT_FACTORY_DEPLOY_DATA, DEPOSIT_FORWARDER_IMPLEMENTATION, DETERMINISTIC_DEPLOYER } from '../internal/depositAddress.ts';
import { depositFactoryArtifact } from '../internal/depositArtifacts.ts';
import type { DepositSender } from './sender.ts';

export interface FactoryDeployment {
  address: Hex;
  implementation: Hex;
  /** False when the factory was there already (nothing was sent). */
  deployed: boolean;
  txHash: Hex | null;
  gasUsed: bigint | null;
}

/**
 * Deploys the deposit factory on the sender's chain through the deterministic deployment proxy
 * (calldata: salt ++ creation code), so it lands at DEPOSIT_FACTORY_ADDRESS as everywhere else.
 * Idempotent: when the factory's code is there, nothing is sent. Anyone may deploy it (the same
 * bytes give the same contract); the key pays gas only. Holds the relayer lock while it signs and
 * sends, since the relayer key's nonce is shared with x402 and sweeps.
 */
export async function deployFactory(params: { store: Store; sender: DepositSender; pollMs?: number; waitMs?: number }): Promise<FactoryDeployment> {
  const { sender } = params;
  const present = async () => (await sender.client.getCode({ address: DEPOSIT_FACTORY_ADDRESS })) !== undefined;
  const result = (deployed: boolean, txHash: Hex | null, gasUsed: bigint | null): FactoryDeployment => ({
    address: DEPOSIT_FACTORY_ADDRESS,
    implementation: DEPOSIT_FORWARDER_IMPLEMENTATION,
    deployed,
    txHash,
    gasUsed,
  });
  if (await present()) return result(false, null, null);
  if ((await sender.client.getCode({ address: DETERMINISTIC_DEPLOYER })) === undefined) {
    throw new NonRetryableError(
      `${sender.chain} has no deterministic deployment proxy at ${DETERMINISTIC_DEPLOYER}: deploy it first (its pre-signed transaction, github.com/Arachnid/deterministic-deployment-proxy), then run this again`,
    );
  }
  const hash = await withRelayerLock(params.store, sender.chain, async () => {
    if (await present()) return null;
    const signed = await sender.sign({ to: DETERMINISTIC_DEPLOYER, data: DEPOSIT_FACTORY_DEPLOY_DATA });
    await sender.broadcast(signed.raw);
    return signed.hash;
  });
  if (!hash) return result(false, null, null);
  const deadline = Date.now() + (params.waitMs ?? 120_000);
  for (;;) {
    const receipt = await sender.receipt(hash);
    if (receipt) {
      if (receipt.status !== 'success' || !(await present())) throw new NonRetryableError(`the factory deployment ${hash} reverted`);
      const code = await sender.client.getCode({ address: DEPOSIT_FACTORY_ADDRESS });
      // The runtime carries one immutable (the implementation's address): compare around it.
      const expected = depositFactoryArtifact.deployedBytecode.replaceAll(
        `7f${'0'.repeat(64)}`,
        `7f${DEPOSIT_FORWARDER_IMPLEMENTATION.slice(2).toLowerCase().padStart(64, '0')}`,
      );
      if (code?.toLowerCase() !== expected.toLowerCase()) throw new NonRetryableError(`the code at ${DEPOSIT_FACTORY_ADDRESS} is not the deposit factory`);
      return result(true, hash, receipt.gasUsed);
    }
    if (Date.now() > deadline) throw new UnavailableError(`the factory deployment ${hash} is not mined yet; run the command again to check`);
    await sleep(params.pollMs ?? 1000);
  }
}

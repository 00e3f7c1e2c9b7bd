import { expect, test } from 'vitest';
import { getContractAddress, keccak256 } from 'viem';
import { DETERMINISTIC_DEPLOYER } from '../../src/internal/depositAddress.ts';
import { PERMIT2_ADDRESS, X402_EXACT_PERMIT2_PROXY, permit2Deployment, proxyDeployment } from '../../src/x402/permit2/contracts.ts';

/**
 * The committed init code of Permit2 and x402's exact Permit2 proxy (contracts/x402/*.json) is the
 * canonical code: through the deterministic deployment proxy with its salt it lands exactly at the
 * canonical address (a CREATE2 address commits to keccak256 of the init code), which every
 * @x402/evm client signs for.
 */
test('the committed init code and salt of each contract give its canonical CREATE2 address', () => {
  for (const [deployment, address] of [
    [permit2Deployment, PERMIT2_ADDRESS],
    [proxyDeployment, X402_EXACT_PERMIT2_PROXY],
  ] as const) {
    expect(deployment.deployer).toBe(DETERMINISTIC_DEPLOYER);
    expect(deployment.address).toBe(address);
    expect(getContractAddress({ opcode: 'CREATE2', from: deployment.deployer, salt: deployment.salt, bytecode: deployment.initCode })).toBe(address);
    expect(deployment.source.length).toBeGreaterThan(40);
  }
  // The hash x402's own deploy script pins for the proxy's init code.
  expect(keccak256(proxyDeployment.initCode)).toBe('0xe774d1d5a07218946ab54efe010b300481478b86861bb17d69c98a57f68a604c');
});

import { concat, getContractAddress, keccak256, pad, toHex, type Address } from 'viem';

/**
 * PLACEHOLDER until branch deposit-contracts lands the real module (same path, same signature):
 * the CREATE2 address of a session's forwarder. Merging that branch replaces this file.
 */
const FACTORY = '0x0000000000000000000000000000000000d3p051t'.replace(/[^0-9a-fx]/gi, '0') as Address;

/** The deposit address of a session: CREATE2(factory, salt = keccak(sessionId), keccak(init code naming merchantWallet)). Pure. */
export function computeDepositAddress(params: { merchantWallet: string; sessionId: string }): Address {
  const initCodeHash = keccak256(concat(['0x6080', pad(params.merchantWallet as Address, { size: 32 })]));
  return getContractAddress({ opcode: 'CREATE2', from: FACTORY, salt: keccak256(toHex(params.sessionId)), bytecodeHash: initCodeHash });
}

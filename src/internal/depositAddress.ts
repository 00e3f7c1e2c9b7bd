import { concat, getContractAddress, keccak256, stringToBytes, type Address, type Hex, getAddress } from 'viem';
import { depositFactoryArtifact } from './depositArtifacts.ts';

/**
 * Deposit addresses: where each address-mode session is paid on the EVM chains. Pure: no I/O
 * beyond the committed contract artifact, no chain access. Addresses are returned EIP-55
 * checksummed, as the gateway stores EVM addresses (src/internal/addresses.ts).
 */

/** The deterministic deployment proxy (Arachnid's), at this address on every chain we use and in anvil. */
export const DETERMINISTIC_DEPLOYER: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';

/** The salt the factory is deployed with through the deterministic deployment proxy. */
export const DEPOSIT_FACTORY_SALT: Hex = '0x0000000000000000000000000000000000000000000000000000000000000000';

/** The factory's address on every EVM chain: CREATE2 from the deployment proxy of its committed creation code. */
export const DEPOSIT_FACTORY_ADDRESS: Address = getContractAddress({
  opcode: 'CREATE2',
  from: DETERMINISTIC_DEPLOYER,
  salt: DEPOSIT_FACTORY_SALT,
  bytecode: depositFactoryArtifact.bytecode,
});

/** The forwarder implementation: the factory's first (and only) CREATE, from its constructor. */
export const DEPOSIT_FORWARDER_IMPLEMENTATION: Address = getContractAddress({ opcode: 'CREATE', from: DEPOSIT_FACTORY_ADDRESS, nonce: 1n });

/** The calldata that deploys the factory through the deterministic deployment proxy: salt ++ creation code. */
export const DEPOSIT_FACTORY_DEPLOY_DATA: Hex = concat([DEPOSIT_FACTORY_SALT, depositFactoryArtifact.bytecode]);

/**
 * The CREATE2 salt of a session's deposit address: keccak256 of the session id's UTF-8 bytes.
 * A merchant can recompute it from the id alone.
 */
export function depositSalt(sessionId: string): Hex {
  return keccak256(stringToBytes(sessionId));
}

/**
 * The init code of the deposit address paying `merchantWallet`: an EIP-1167 minimal proxy to the
 * forwarder implementation (a 65-byte runtime: 45 bytes of proxy, then the destination).
 * Mirrors DepositFactory._initCode byte for byte.
 */
export function forwarderInitCode(merchantWallet: string): Hex {
  return concat([
    '0x3d604180600a3d3981f3',
    '0x363d3d373d3d3d363d73',
    DEPOSIT_FORWARDER_IMPLEMENTATION,
    '0x5af43d82803e903d91602b57fd5bf3',
    getAddress(merchantWallet.toLowerCase()),
  ]);
}

const initCodeHashes = new Map<string, Hex>();

function initCodeHash(merchantWallet: string): Hex {
  const key = merchantWallet.toLowerCase();
  let hash = initCodeHashes.get(key);
  if (!hash) {
    hash = keccak256(forwarderInitCode(merchantWallet));
    // A merchant has few wallets; bounded anyway, so a long-running process cannot grow it without end.
    if (initCodeHashes.size >= 10_000) initCodeHashes.clear();
    initCodeHashes.set(key, hash);
  }
  return hash;
}

/**
 * A session's deposit address on every EVM chain: the CREATE2 address, from the factory, of the
 * forwarder whose only destination is `merchantWallet`, salted with the session id. It holds
 * funds before any contract exists there; the factory deploys and flushes it in one transaction.
 * @throws viem's InvalidAddressError when `merchantWallet` is not a 20-byte hex address (any case).
 */
export function computeDepositAddress(params: { merchantWallet: string; sessionId: string }): Address {
  return depositAddressForSalt({ merchantWallet: params.merchantWallet, salt: depositSalt(params.sessionId) });
}

/** The deposit address of (merchantWallet, salt): what the factory's `forwarderAddress` answers. */
export function depositAddressForSalt(params: { merchantWallet: string; salt: Hex }): Address {
  return getContractAddress({ opcode: 'CREATE2', from: DEPOSIT_FACTORY_ADDRESS, salt: params.salt, bytecodeHash: initCodeHash(params.merchantWallet) });
}

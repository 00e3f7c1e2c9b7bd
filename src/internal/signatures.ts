import { createPublicKey, verify as verifyEd25519 } from 'node:crypto';
import { hashMessage, isAddressEqual, recoverMessageAddress, type Hex } from 'viem';
import type { ChainName } from './config.ts';
import { base58Bytes, solanaAddressBytes } from './addresses.ts';

/**
 * Asks a chain whether a smart-contract wallet accepts a signature over a message hash
 * (ERC-1271 `isValidSignature(bytes32, bytes)` returning 0x1626ba7e). Given by callers that can
 * reach the chain (the checkout's transaction lookups); without it only key signatures count.
 */
export type ContractSignatureCheck = (params: { chain: ChainName; address: string; hash: Hex; signature: Hex }) => Promise<boolean>;

/** An EOA's EIP-191 signature: 65 bytes. Longer ones can only be a contract wallet's (ERC-1271). */
const EOA_SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
/** ERC-1271 signatures are opaque bytes; 2 KiB covers multisig owners' signatures with room to spare. */
const CONTRACT_SIGNATURE = /^0x(?:[0-9a-fA-F]{2}){1,2048}$/;

/**
 * Whether `signature` is `address`'s signature over the UTF-8 `message`:
 * - EVM chains: EIP-191 (`personal_sign`, viem's `signMessage`) by the address's key; when that
 *   does not recover the address and `contractCheck` is given, the address's ERC-1271
 *   `isValidSignature` over the EIP-191 hash (smart-contract wallets: Safe, Coinbase Smart Wallet);
 * - solana: ed25519 over the message's bytes by the address's key, base58 or base64 (what a
 *   wallet adapter's `signMessage` returns, encoded).
 * Never throws for a malformed signature: it is simply not valid (a failing `contractCheck` throws).
 */
export async function verifyWalletSignature(params: {
  chain: ChainName;
  address: string;
  message: string;
  signature: string;
  contractCheck?: ContractSignatureCheck;
}): Promise<boolean> {
  const { chain, address, message, signature } = params;
  if (chain === 'solana') return verifySolana(address, message, signature);
  if (EOA_SIGNATURE.test(signature)) {
    const recovered = await recoverMessageAddress({ message, signature: signature as Hex }).catch(() => undefined);
    if (recovered && isAddressEqual(recovered, address as Hex)) return true;
  }
  if (!params.contractCheck || !CONTRACT_SIGNATURE.test(signature)) return false;
  return params.contractCheck({ chain, address, hash: hashMessage(message), signature: signature as Hex });
}

function verifySolana(address: string, message: string, signature: string): boolean {
  const bytes = decodeSolanaSignature(signature);
  if (!bytes) return false;
  try {
    const publicKey = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(solanaAddressBytes(address)).toString('base64url') },
      format: 'jwk',
    });
    return verifyEd25519(null, Buffer.from(message, 'utf8'), publicKey, bytes);
  } catch {
    return false;
  }
}

function decodeSolanaSignature(signature: string): Buffer | undefined {
  try {
    const base58 = Buffer.from(base58Bytes(signature));
    if (base58.length === 64) return base58;
  } catch {
    // not base58; try base64 below
  }
  const base64 = Buffer.from(signature, 'base64');
  return base64.length === 64 ? base64 : undefined;
}

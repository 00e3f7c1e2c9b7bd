import { getAddress, isAddress as isEvmAddress } from 'viem';
import { getAddressEncoder, getBase58Encoder, isAddress as isSolanaAddress, type Address } from '@solana/kit';
import type { ChainName } from './config.ts';

/**
 * Checks a receiving address for `chain` and returns its canonical text: EIP-55 checksummed hex
 * on the EVM chains (a lower- or upper-case address is accepted, a wrongly mixed-case one is not,
 * since that is what a checksum is for), base58 of a 32-byte key on solana.
 * @returns the canonical address, or `undefined` when the text is not a valid address there.
 */
export function canonicalAddress(chain: ChainName, text: string): string | undefined {
  if (chain === 'solana') return isSolanaAddress(text) ? text : undefined;
  if (!/^0x[0-9a-fA-F]{40}$/.test(text)) return undefined;
  const hasMixedCase = text.slice(2) !== text.slice(2).toLowerCase() && text.slice(2) !== text.slice(2).toUpperCase();
  if (hasMixedCase && !isEvmAddress(text, { strict: true })) return undefined;
  return getAddress(text.toLowerCase());
}

/** The 32 raw bytes of a solana address (an ed25519 public key). */
export function solanaAddressBytes(text: string): Uint8Array {
  return new Uint8Array(getAddressEncoder().encode(text as Address));
}

/** Decodes base58 text (solana signatures, keys). Throws on characters outside the alphabet. */
export function base58Bytes(text: string): Uint8Array {
  return new Uint8Array(getBase58Encoder().encode(text));
}

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

/**
 * EVM addresses no one can spend from, so funds sent there are gone: the zero address (where
 * ERC-20 mints come from and burns go) and the conventional `0x…dEaD` burn address. Keys are
 * lower case.
 */
/** The prefix of every fake EVM value the sandbox makes (kept in step with src/internal/sandboxIds.ts). */
export const SANDBOX_EVM_PREFIX = '0x5a4db0c5';

const EVM_BURN_ADDRESSES: Record<string, string> = {
  '0x0000000000000000000000000000000000000000': 'the zero address (tokens sent there are burned)',
  '0x000000000000000000000000000000000000dead': 'the 0x…dEaD burn address (tokens sent there are burned)',
};

/**
 * Solana program ids that a payer's wallet would happily build a transfer to, but which can never
 * sign to move the tokens on: the System Program, the token programs, the associated-token-account
 * program and the incinerator (a burn address).
 */
const SOLANA_UNSPENDABLE: Record<string, string> = {
  '11111111111111111111111111111111': 'the System Program',
  TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA: 'the SPL Token program',
  TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb: 'the Token-2022 program',
  ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL: 'the Associated Token Account program',
  '1nc1nerator11111111111111111111111111111111': 'the incinerator (tokens sent there are burned)',
};

/**
 * Why a valid, canonical address of `chain` can never receive a payment a merchant could spend,
 * or `undefined` when nothing is known against it: burn addresses, well-known program ids, and
 * the chain's own token contracts or mints (`tokens`: the chain's configured tokens; an ERC-20
 * sent to its own contract is stuck there, and a mint cannot own tokens it would be paid).
 */
export function unreceivableReason(
  chain: ChainName,
  canonical: string,
  tokens: readonly { symbol: string; address: string; tokenProgram?: string | undefined }[],
): string | undefined {
  if (chain === 'solana') {
    const program = SOLANA_UNSPENDABLE[canonical];
    if (program) return `is ${program}, not a wallet`;
    const token = tokens.find((t) => t.address === canonical);
    if (token) return `is the ${token.symbol} mint itself, not a wallet`;
    if (tokens.some((t) => t.tokenProgram === canonical)) return 'is a token program, not a wallet';
    return undefined;
  }
  const lower = canonical.toLowerCase();
  const burn = EVM_BURN_ADDRESSES[lower];
  if (burn) return `is ${burn}`;
  // The sandbox's fake EVM values all start so ("SANDBOX" in hex-speak, src/internal/sandboxIds.ts): a
  // merchant pasting one from a test response would give a wallet nobody holds the key of. A real
  // address starts so by chance once in four billion.
  if (lower.startsWith(SANDBOX_EVM_PREFIX)) return `is a sandbox address (${SANDBOX_EVM_PREFIX}…, from a test response), which nobody controls`;
  const token = tokens.find((t) => t.address.toLowerCase() === lower);
  if (token) return `is the ${token.symbol} token contract itself (tokens sent to it are stuck there)`;
  return undefined;
}

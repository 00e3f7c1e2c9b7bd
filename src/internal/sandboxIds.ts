import { createHash, randomBytes } from 'node:crypto';
import { getAddress } from 'viem';
import { getBase58Decoder } from '@solana/kit';
import type { ChainName } from './config.ts';
import { SANDBOX_EVM_PREFIX } from './addresses.ts';

/**
 * Sandbox identifiers. They live in the bottom layer because the session model (a sandbox
 * session pays to {@link sandboxWallet}) and the checkout's payment instructions need them as
 * much as the simulator does, and lower stages never import the sandbox.
 *
 * Sandbox identifiers look like the real thing (same length and alphabet, so merchants' parsers
 * and database columns are exercised) but are recognisably fake: EVM values start with
 * `0x5a4db0c5` ("SANDBOX" in hex-speak); solana values are random base58 of the right length.
 * Every sandbox response and event also says `livemode: false`.
 */
const EVM_MARK = SANDBOX_EVM_PREFIX.slice(2);

/** A fake transaction hash (EVM) or signature (solana). */
export function fakeTxHash(chain: ChainName): string {
  if (chain === 'solana') return getBase58Decoder().decode(randomBytes(64));
  return `0x${EVM_MARK}${randomBytes(28).toString('hex')}`;
}

/** A fake block hash. */
export function fakeBlockHash(chain: ChainName, number: bigint): string {
  const digest = createHash('sha256').update(`sandbox:${chain}:${number}`).digest();
  return chain === 'solana' ? getBase58Decoder().decode(digest) : `0x${EVM_MARK}${digest.subarray(4).toString('hex')}`;
}

/** A fake payer address. */
export function fakeAddress(chain: ChainName, seed: string = randomBytes(16).toString('hex')): string {
  const digest = createHash('sha256').update(`sandbox-address:${seed}`).digest();
  if (chain === 'solana') return getBase58Decoder().decode(digest);
  return getAddress(`0x${EVM_MARK}${digest.subarray(0, 16).toString('hex')}`);
}

/**
 * The receiving address a sandbox session uses when the merchant has no wallet on that chain:
 * derived from the merchant id, so it is stable per merchant and obviously not a real wallet.
 */
export function sandboxWallet(chain: ChainName, merchantId: string): string {
  return fakeAddress(chain, `wallet:${merchantId}`);
}

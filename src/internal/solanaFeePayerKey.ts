import { createPrivateKey, createPublicKey } from 'node:crypto';
import { getBase58Encoder } from '@solana/kit';
import { relayerKeyFileVariableName, relayerKeyText, relayerKeyVariableName } from './relayerKeys.ts';

type Env = Record<string, string | undefined>;

/** PKCS#8 DER prefix of an ed25519 private key: the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The ed25519 public key of a 32-byte seed (what a Solana keypair's last 32 bytes must be), with
 * node:crypto so that the configuration stays synchronous.
 */
function publicKeyOf(seed: Uint8Array): Uint8Array {
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(spki.length - 32));
}

/** A Solana keypair: 64 bytes (seed, public key), as base58 text (a wallet's export) or solana-keygen's JSON array. */
function parseKeypair(text: string): Uint8Array {
  let bytes: Uint8Array;
  if (text.startsWith('[')) {
    let numbers: unknown;
    try {
      numbers = JSON.parse(text);
    } catch {
      throw new Error("must be a Solana keypair: solana-keygen's JSON array of 64 bytes, or its base58 text");
    }
    if (!Array.isArray(numbers) || !numbers.every((n) => Number.isInteger(n) && n >= 0 && n <= 255))
      throw new Error("must be a Solana keypair: solana-keygen's JSON array of 64 bytes, or its base58 text");
    bytes = Uint8Array.from(numbers as number[]);
  } else {
    try {
      bytes = new Uint8Array(getBase58Encoder().encode(text));
    } catch {
      throw new Error("must be a Solana keypair: base58 text of 64 bytes, or solana-keygen's JSON array");
    }
  }
  if (bytes.length !== 64) throw new Error('must be a Solana keypair of 64 bytes (seed and public key)');
  const derived = publicKeyOf(bytes.subarray(0, 32));
  if (!derived.every((byte, index) => byte === bytes[32 + index])) throw new Error("is not a keypair: its last 32 bytes are not its seed's public key");
  return bytes;
}

/**
 * The Solana fee-payer key of x402's `exact` scheme (`SVC_SOLANA_RELAYER_KEY`, or the file that
 * `SVC_SOLANA_RELAYER_KEY_FILE` names, e.g. solana-keygen's keypair file mounted as a secret): it
 * pays transaction fees and the rent of the merchant's token account, nothing else
 * (docs/security.md, "x402 on Solana"). Problems are pushed to `errors`, naming the variable and
 * never the key.
 */
export function readSolanaFeePayerKey(env: Env, errors: string[]): Uint8Array | undefined {
  const text = relayerKeyText(env, 'solana', errors);
  if (!text) return undefined;
  try {
    return parseKeypair(text);
  } catch (error) {
    const name = env[relayerKeyVariableName('solana')]?.trim() ? relayerKeyVariableName('solana') : `the file of ${relayerKeyFileVariableName('solana')}`;
    errors.push(`${name}: ${(error as Error).message}`);
    return undefined;
  }
}

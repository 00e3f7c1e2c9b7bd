import fs from 'node:fs';
import { CHAIN_NAMES, type ChainName } from './chainNames.ts';

/** The environment as the configuration reads it. */
type Env = Record<string, string | undefined>;

/** The per-chain x402 relayer key variable (EVM chains), documented alongside VARIABLES. */
export function relayerKeyVariableName(chain: ChainName): string {
  return `SVC_${chain.toUpperCase()}_RELAYER_KEY`;
}

/**
 * The variable naming a file that holds a chain's relayer key (`SVC_<CHAIN>_RELAYER_KEY_FILE`):
 * a Kubernetes or Docker secret mounted as a file, so the key is in no process environment.
 */
export function relayerKeyFileVariableName(chain: ChainName): string {
  return `${relayerKeyVariableName(chain)}_FILE`;
}

/**
 * A chain's relayer key text: from `SVC_<CHAIN>_RELAYER_KEY`, or read from the file that
 * `SVC_<CHAIN>_RELAYER_KEY_FILE` names (its content trimmed; an empty file is no key). Both set is
 * an error: which one wins would be a guess. Errors name the variable and the path, never the key.
 */
export function relayerKeyText(env: Env, chain: ChainName, errors: string[]): string | undefined {
  const name = relayerKeyVariableName(chain);
  const fileName = relayerKeyFileVariableName(chain);
  const direct = env[name]?.trim() || undefined;
  const file = env[fileName]?.trim() || undefined;
  if (direct && file) {
    errors.push(`${name} and ${fileName} are both set: set one (the _FILE form keeps the key out of the environment)`);
    return undefined;
  }
  if (!file) return direct;
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch (error) {
    errors.push(`${fileName}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

/** A relayer private key: 32 bytes of hex. The message never repeats the value. */
function parseRelayerKey(raw: string): `0x${string}` {
  const text = raw.trim();
  const hex = text.startsWith('0x') ? text : `0x${text}`;
  if (!/^0x[0-9a-fA-F]{64}$/.test(hex) || /^0x0+$/.test(hex)) throw new Error('must be a 32-byte private key in hex (0x and 64 hex digits)');
  return hex.toLowerCase() as `0x${string}`;
}

/**
 * The gas-only relayer keys of the EVM chains (x402 settlements and deposit sweeps), from
 * `SVC_<CHAIN>_RELAYER_KEY` or the file its `_FILE` variable names. Problems are pushed to
 * `errors`, each naming the variable, never the key.
 */
export function readRelayerKeys(env: Env, errors: string[]): Partial<Record<ChainName, `0x${string}`>> {
  const relayerKeys: Partial<Record<ChainName, `0x${string}`>> = {};
  for (const chain of CHAIN_NAMES) {
    const name = relayerKeyVariableName(chain);
    // bsc has no EIP-3009 token (no x402 there), but its relayer key pays deposit sweeps (docs/deposit-addresses.md).
    // Solana's key is an ed25519 keypair, read by readSolanaFeePayerKey (solanaFeePayerKey.ts).
    if (chain === 'solana') continue;
    const text = relayerKeyText(env, chain, errors);
    // The error names the variable but never echoes the key (ConfigError messages are printed).
    let key: `0x${string}` | undefined;
    try {
      key = text ? parseRelayerKey(text) : undefined;
    } catch (error) {
      errors.push(`${env[name]?.trim() ? name : `the file of ${relayerKeyFileVariableName(chain)}`}: ${(error as Error).message}`);
    }
    if (key) relayerKeys[chain] = key;
  }
  return relayerKeys;
}

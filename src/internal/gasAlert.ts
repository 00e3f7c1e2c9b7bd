import { CHAIN_NAMES, type ChainName } from './config.ts';

/**
 * Below how much native coin a chain's relayer key (x402 and deposit sweeps; on solana x402's fee
 * payer) is reported as running low: exported as `svc_x402_relayer_gas_alert_threshold{chain}`,
 * which the `SvcX402RelayerGasLow` alert compares `svc_x402_relayer_gas_balance` with, so an
 * operator changes a threshold with a variable instead of editing the alert rules.
 *
 * Defaults are a few hundred settlements' worth: 5 POL on polygon, 0.005 ETH on the L2s and BNB
 * on bsc, 0.05 SOL on solana. A Solana payment costs the fee payer at most 0.00007 SOL of fees
 * (two signatures, the priority fee cap), but it may also fund a merchant's token account, about
 * 0.002 SOL of rent each: 0.05 SOL is about 25 such first payments, or 700 plain ones, of notice.
 */
export const DEFAULT_GAS_ALERT_BELOW: Record<ChainName, string> = {
  polygon: '5',
  base: '0.005',
  bsc: '0.005',
  arbitrum: '0.005',
  optimism: '0.005',
  solana: '0.05',
};

/** `SVC_<CHAIN>_RELAYER_GAS_ALERT_BELOW`, documented alongside VARIABLES (docs/configuration.md). */
export function gasAlertVariableName(chain: ChainName): string {
  return `SVC_${chain.toUpperCase()}_RELAYER_GAS_ALERT_BELOW`;
}

/** A positive amount of whole coins: digits with at most 9 decimals (a lamport; gwei on EVM). */
const COINS = /^\d{1,9}(\.\d{1,9})?$/;

/**
 * Reads each chain's threshold (decimal text of whole coins), its default when unset. A bad value
 * is recorded in `errors` with the variable's name.
 */
export function readGasAlertThresholds(env: Record<string, string | undefined>, errors: string[]): Record<ChainName, string> {
  const thresholds = { ...DEFAULT_GAS_ALERT_BELOW };
  for (const chain of CHAIN_NAMES) {
    const raw = env[gasAlertVariableName(chain)]?.trim();
    if (!raw) continue;
    if (!COINS.test(raw) || !/[1-9]/.test(raw)) {
      errors.push(`${gasAlertVariableName(chain)}=${JSON.stringify(raw)}: must be a positive amount of whole coins, like 0.05 (at most 9 decimals)`);
      continue;
    }
    thresholds[chain] = raw;
  }
  return thresholds;
}

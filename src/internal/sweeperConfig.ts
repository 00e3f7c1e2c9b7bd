import { parseBoolean } from './configValues.ts';

/**
 * The worker's automatic deposit sweeper (docs/deposit-addresses.md, "The automatic sweeper"):
 * when it runs, which deposits it waits for, how many addresses one transaction covers.
 */
export interface SweeperConfig {
  /** SVC_DEPOSIT_SWEEP: false stops the automatic sweeper (`svc deposits sweep` still works). */
  enabled: boolean;
  /** Pause between two passes, in milliseconds. */
  intervalMs: number;
  /**
   * The least a deposit address must hold (per token, confirmed, unswept) to be swept at once, in
   * whole tokens as a decimal string per currency; below it, it waits until `maxAgeSeconds`.
   */
  minimum: { USDC: string; USDT: string };
  /** A confirmed deposit this old is swept whatever its value. */
  maxAgeSeconds: number;
  /** Most deposit addresses per sweep transaction. */
  batch: number;
}

function wholeNumber(min: number, max: number, unit: string) {
  return (raw: string): number => {
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) throw new Error(`must be a whole number of ${unit} from ${min} to ${max}`);
    return Number(raw);
  };
}

/** A token amount in whole tokens: digits with at most 6 decimals (every USDC and USDT has at least 6). */
function tokenAmount(raw: string): string {
  const text = raw.trim();
  if (!/^\d{1,12}(\.\d{1,6})?$/.test(text)) throw new Error('must be an amount in whole tokens, like 5 or 0.5 (at most 6 decimals)');
  return text;
}

/** The variables, spread into config.ts's VARIABLES (so docs/configuration.md's table and `svc config` list them). */
export const SWEEPER_VARIABLES = {
  depositSweep: {
    name: 'SVC_DEPOSIT_SWEEP',
    doc: 'true: worker processes sweep confirmed deposit addresses into the merchants’ wallets on every EVM chain with a relayer key and an RPC URL; false: only `svc deposits sweep` does',
    default: 'true',
    parse: parseBoolean,
  },
  depositSweepIntervalSeconds: {
    name: 'SVC_DEPOSIT_SWEEP_INTERVAL_SECONDS',
    doc: 'Seconds between two passes of the deposit sweeper',
    default: '300',
    parse: wholeNumber(5, 86_400, 'seconds'),
  },
  depositSweepMinUsdc: {
    name: 'SVC_DEPOSIT_SWEEP_MIN_USDC',
    doc: 'Least confirmed USDC (whole tokens) a deposit address must hold to be swept at once; less waits for SVC_DEPOSIT_SWEEP_MAX_AGE_SECONDS',
    default: '1',
    parse: tokenAmount,
  },
  depositSweepMinUsdt: {
    name: 'SVC_DEPOSIT_SWEEP_MIN_USDT',
    doc: 'Least confirmed USDT (whole tokens) a deposit address must hold to be swept at once; less waits for SVC_DEPOSIT_SWEEP_MAX_AGE_SECONDS',
    default: '1',
    parse: tokenAmount,
  },
  depositSweepMaxAgeSeconds: {
    name: 'SVC_DEPOSIT_SWEEP_MAX_AGE_SECONDS',
    doc: 'A confirmed deposit below the minimum is swept anyway once it has waited this many seconds',
    default: '86400',
    parse: wholeNumber(0, 30 * 86_400, 'seconds'),
  },
  depositSweepBatch: {
    name: 'SVC_DEPOSIT_SWEEP_BATCH',
    doc: 'Most deposit addresses one sweep transaction covers (1 to 200; gas per payment barely falls past 50)',
    default: '50',
    parse: wholeNumber(1, 200, 'addresses'),
  },
};

/** Defaults, for callers that build a Config by hand. */
export const DEFAULT_SWEEPER: SweeperConfig = { enabled: true, intervalMs: 300_000, minimum: { USDC: '1', USDT: '1' }, maxAgeSeconds: 86_400, batch: 50 };

type Read = <T>(variable: { name: string; doc: string; default: string | undefined; parse: (raw: string) => T }) => T | undefined;

/** Reads the sweeper's variables with loadConfig's `read` (which records bad values). */
export function readSweeperConfig(read: Read): SweeperConfig {
  const v = SWEEPER_VARIABLES;
  const d = DEFAULT_SWEEPER;
  return {
    enabled: read(v.depositSweep) ?? d.enabled,
    intervalMs: (read(v.depositSweepIntervalSeconds) ?? d.intervalMs / 1000) * 1000,
    minimum: { USDC: read(v.depositSweepMinUsdc) ?? d.minimum.USDC, USDT: read(v.depositSweepMinUsdt) ?? d.minimum.USDT },
    maxAgeSeconds: read(v.depositSweepMaxAgeSeconds) ?? d.maxAgeSeconds,
    batch: read(v.depositSweepBatch) ?? d.batch,
  };
}

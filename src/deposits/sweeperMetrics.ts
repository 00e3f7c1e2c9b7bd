import { formatUnits } from 'viem';
import type { ChainConfig } from '../internal/chains.ts';
import type { UnsweptDeposit } from './candidates.ts';
import { AGE_BUCKETS, ageBucket, type DepositMetrics } from './metrics.ts';
import type { SweepRecord } from './sweeps.ts';

/** Counts one resolved sweep: its outcome, its gas, its failed items (by token symbol). */
export function recordSweepMetrics(metrics: DepositMetrics, chain: ChainConfig, sweep: SweepRecord): void {
  if (sweep.status === 'sent') return;
  const failed = sweep.items.filter((item) => item.outcome === 'failed');
  const outcome = sweep.status === 'dropped' ? 'dropped' : sweep.status === 'mined' && failed.length === 0 ? 'succeeded' : 'failed';
  metrics.sweeps.inc({ chain: chain.name, outcome });
  if (sweep.gasUsed !== null) metrics.gasUsed.inc({ chain: chain.name }, Number(sweep.gasUsed));
  if (sweep.status === 'dropped') return;
  for (const item of failed) metrics.itemFailures.inc({ chain: chain.name, token: symbolOf(chain, item.token) });
}

function symbolOf(chain: ChainConfig, token: string): string {
  return chain.tokens.find((t) => t.address.toLowerCase() === token.toLowerCase())?.symbol ?? 'other';
}

/**
 * Sets the chain's unswept gauges from `waiting` (every token and age bucket of the chain, 0
 * where nothing waits, so a swept deposit shows as 0 rather than as its last value). Values in
 * whole tokens: a float is fine for a gauge, never for money.
 */
export async function setUnsweptGauges(metrics: DepositMetrics, chain: ChainConfig, waiting: readonly UnsweptDeposit[], now: number): Promise<void> {
  const symbols = [...new Set([...chain.tokens.map((t) => t.symbol), ...waiting.map((d) => symbolOf(chain, d.token))])];
  const counts = new Map<string, number>();
  const values = new Map<string, number>();
  const oldest = new Map<string, number>();
  for (const deposit of waiting) {
    const symbol = symbolOf(chain, deposit.token);
    const seconds = Math.max(0, (now - deposit.oldest.getTime()) / 1000);
    const key = `${symbol}|${ageBucket(seconds)}`;
    const decimals = chain.tokens.find((t) => t.address.toLowerCase() === deposit.token.toLowerCase())?.decimals ?? 0;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    values.set(key, (values.get(key) ?? 0) + Number(formatUnits(deposit.amount, decimals)));
    oldest.set(symbol, Math.max(oldest.get(symbol) ?? 0, seconds));
  }
  for (const token of symbols) {
    for (const { label: age } of AGE_BUCKETS) {
      metrics.unsweptCount.set({ chain: chain.name, token, age }, counts.get(`${token}|${age}`) ?? 0);
      metrics.unsweptValue.set({ chain: chain.name, token, age }, values.get(`${token}|${age}`) ?? 0);
    }
    metrics.oldestUnswept.set({ chain: chain.name, token }, Math.round(oldest.get(token) ?? 0));
  }
}

import { Counter, Gauge, type Registry } from 'prom-client';

/** The deposit sweeper's Prometheus metrics (`svc_deposit_*`), registered once per registry. */
export interface DepositMetrics {
  /** Confirmed deposits no sweep has covered yet, by chain, token symbol and age bucket (set by each sweeper pass). */
  unsweptCount: Gauge<'chain' | 'token' | 'age'>;
  /** Their value in whole tokens (USDC, USDT), by chain, token and age bucket. */
  unsweptValue: Gauge<'chain' | 'token' | 'age'>;
  /** Seconds the oldest of them has waited, by chain and token (0: none waits). */
  oldestUnswept: Gauge<'chain' | 'token'>;
  /** Sweeps resolved, by chain and outcome: succeeded (every item flushed), failed (reverted, or an item failed), dropped. */
  sweeps: Counter<'chain' | 'outcome'>;
  /** Items (address, token) a mined or reverted sweep failed to flush. */
  itemFailures: Counter<'chain' | 'token'>;
  /** Gas used by sweeps, by chain. */
  gasUsed: Counter<'chain'>;
}

/** Age buckets of waiting deposits, by their upper bound in seconds (the last has none). */
export const AGE_BUCKETS: readonly { label: string; below: number }[] = [
  { label: '1h', below: 3_600 },
  { label: '6h', below: 6 * 3_600 },
  { label: '24h', below: 24 * 3_600 },
  { label: 'older', below: Number.POSITIVE_INFINITY },
];

/** The bucket of a deposit that has waited `seconds`: `1h` (under an hour), `6h`, `24h`, or `older`. */
export function ageBucket(seconds: number): string {
  return AGE_BUCKETS.find((bucket) => seconds < bucket.below)!.label;
}

const cache = new WeakMap<Registry, DepositMetrics>();

export function createDepositMetrics(registry: Registry): DepositMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const metrics: DepositMetrics = {
    unsweptCount: new Gauge({
      name: 'svc_deposit_unswept',
      help: 'Confirmed deposits (session and token) waiting at deposit addresses, by chain, token and age bucket (1h, 6h, 24h: under that age; older)',
      labelNames: ['chain', 'token', 'age'],
      registers,
    }),
    unsweptValue: new Gauge({
      name: 'svc_deposit_unswept_value',
      help: 'Value of the confirmed deposits waiting at deposit addresses, in whole tokens, by chain, token and age bucket',
      labelNames: ['chain', 'token', 'age'],
      registers,
    }),
    oldestUnswept: new Gauge({
      name: 'svc_deposit_unswept_oldest_seconds',
      help: 'Seconds the oldest confirmed deposit not yet swept has waited, by chain and token (0: none)',
      labelNames: ['chain', 'token'],
      registers,
    }),
    sweeps: new Counter({
      name: 'svc_deposit_sweeps_total',
      help: 'Deposit sweeps resolved, by chain and outcome (succeeded, failed: reverted or an item failed, dropped: its nonce went to another transaction)',
      labelNames: ['chain', 'outcome'],
      registers,
    }),
    itemFailures: new Counter({
      name: 'svc_deposit_sweep_failures_total',
      help: 'Deposit addresses and tokens a mined sweep failed to flush (FlushFailed, DeployFailed, a reverted sweep)',
      labelNames: ['chain', 'token'],
      registers,
    }),
    gasUsed: new Counter({ name: 'svc_deposit_sweep_gas_used_total', help: 'Gas used by deposit sweeps, by chain', labelNames: ['chain'], registers }),
  };
  cache.set(registry, metrics);
  return metrics;
}

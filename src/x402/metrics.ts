import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChainName } from '../internal/config.ts';

/** x402's Prometheus metrics, registered once per registry. */
export interface X402Metrics {
  /** Settlements by chain and outcome: settled, failed (on chain), refused (402 before anything was sent), replayed (the same signature answered again). */
  settlements: Counter<'chain' | 'outcome'>;
  /** Each relayer's native balance in the chain's base unit (ETH, POL), read after each settlement and by the gas watch. */
  relayerGas: Gauge<'chain' | 'address'>;
  /** Per chain with a relayer key or fee payer here, the balance below which it is low (SVC_<CHAIN>_RELAYER_GAS_ALERT_BELOW); the alert compares the two. */
  relayerGasThreshold: Gauge<'chain'>;
}

const cache = new WeakMap<Registry, X402Metrics>();

export function createX402Metrics(registry: Registry): X402Metrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const metrics: X402Metrics = {
    settlements: new Counter({
      name: 'svc_x402_settlements_total',
      help: 'x402 payments by chain and outcome (settled, failed, refused, replayed)',
      labelNames: ['chain', 'outcome'],
      registers: [registry],
    }),
    relayerGas: new Gauge({
      name: 'svc_x402_relayer_gas_balance',
      help: "Native balance of each chain's x402 relayer key (gas only), in whole coins (ETH, POL)",
      labelNames: ['chain', 'address'],
      registers: [registry],
    }),
    relayerGasThreshold: new Gauge({
      name: 'svc_x402_relayer_gas_alert_threshold',
      help: "Native balance (whole coins) below which a chain's relayer key or Solana fee payer is reported low (SVC_<CHAIN>_RELAYER_GAS_ALERT_BELOW)",
      labelNames: ['chain'],
      registers: [registry],
    }),
  };
  cache.set(registry, metrics);
  return metrics;
}

/** Sets the low-balance threshold of each chain that has a relayer key or fee payer in this process (whole coins, decimal text). */
export function recordGasThresholds(metrics: X402Metrics, thresholds: Partial<Record<ChainName, string>>, chains: readonly ChainName[]): void {
  for (const chain of chains) {
    const below = thresholds[chain];
    // A gauge is a float; thresholds are a few coins with at most 9 decimals, exact enough to compare with a balance.
    if (below !== undefined) metrics.relayerGasThreshold.set({ chain }, Number(below));
  }
}

import { Counter, Gauge, type Registry } from 'prom-client';

/** x402's Prometheus metrics, registered once per registry. */
export interface X402Metrics {
  /** Settlements by chain and outcome: settled, failed (on chain), refused (402 before anything was sent), replayed (the same signature answered again). */
  settlements: Counter<'chain' | 'outcome'>;
  /** Each relayer's native balance in the chain's base unit (ETH, POL), read after each settlement and by the gas watch. */
  relayerGas: Gauge<'chain' | 'address'>;
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
  };
  cache.set(registry, metrics);
  return metrics;
}

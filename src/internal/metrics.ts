import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per daemon (not prom-client's global one), so tests can run several
 * daemons in one process. Stages register their own metrics on it, named `svc_<stage>_…`.
 */
export function createMetricsRegistry(params: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (params.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  return registry;
}

export type { Registry };

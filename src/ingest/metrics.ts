import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Every ingest metric, labelled by chain; created once per registry and shared by every chain's
 * ingester, its RPC pool and its supervisor. The names and labels are what `dashboards/` and the
 * alert rules query (test/ingest/dashboards.test.ts): renaming one breaks them.
 */
export interface IngestMetrics {
  headBlock: Gauge<'chain'>;
  processedBlock: Gauge<'chain'>;
  safeBlock: Gauge<'chain'>;
  finalizedBlock: Gauge<'chain'>;
  /** Wall-clock time of the last new head per chain, read by the `seconds since head` gauge. */
  lastHeadAt: Map<string, number>;
  reorgs: Counter<'chain'>;
  reorgDepth: Histogram<'chain'>;
  /** The alert: reorgs deeper than the chain's confirmation rule, or reaching below `finalized`. */
  deepReorgs: Counter<'chain' | 'rule'>;
  rpcDuration: Histogram<'chain' | 'method' | 'endpoint'>;
  rpcErrors: Counter<'chain' | 'method' | 'endpoint' | 'kind'>;
  transfers: Counter<'chain'>;
  leader: Gauge<'chain'>;
  blocks: Counter<'chain'>;
  /** Deposit addresses of open `address` mode sessions the EVM ingester watches (issue 25). */
  watchedDeposits: Gauge<'chain'>;
}

const cache = new WeakMap<Registry, IngestMetrics>();

/** Registers the `svc_ingest_*` metrics on `registry` (idempotent per registry). */
export function createIngestMetrics(registry: Registry): IngestMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const lastHeadAt = new Map<string, number>();
  const metrics: IngestMetrics = {
    headBlock: new Gauge({ name: 'svc_ingest_head_block', help: 'Latest block number seen on the chain', labelNames: ['chain'], registers }),
    processedBlock: new Gauge({
      name: 'svc_ingest_processed_block',
      help: 'Checkpoint: every block up to this one is stored',
      labelNames: ['chain'],
      registers,
    }),
    safeBlock: new Gauge({ name: 'svc_ingest_safe_block', help: "The node's `safe` block", labelNames: ['chain'], registers }),
    finalizedBlock: new Gauge({ name: 'svc_ingest_finalized_block', help: "The node's `finalized` block", labelNames: ['chain'], registers }),
    lastHeadAt,
    reorgs: new Counter({ name: 'svc_ingest_reorgs_total', help: 'Chain reorganisations handled', labelNames: ['chain'], registers }),
    reorgDepth: new Histogram({
      name: 'svc_ingest_reorg_depth_blocks',
      help: 'Depth of handled reorgs in blocks',
      labelNames: ['chain'],
      buckets: [1, 2, 3, 5, 10, 20, 32, 64, 128, 256],
      registers,
    }),
    deepReorgs: new Counter({
      name: 'svc_ingest_deep_reorgs_total',
      help: "ALERT: reorgs deeper than the chain's confirmation depth (rule=confirmed) or below its finalized block (rule=finalized)",
      labelNames: ['chain', 'rule'],
      registers,
    }),
    rpcDuration: new Histogram({
      name: 'svc_ingest_rpc_request_duration_seconds',
      help: 'JSON-RPC request latency by method and endpoint (endpoint = index:host, never the full URL)',
      labelNames: ['chain', 'method', 'endpoint'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    rpcErrors: new Counter({
      name: 'svc_ingest_rpc_errors_total',
      help: 'Failed JSON-RPC requests by method, endpoint and kind (range, rate, endpoint, rejected)',
      labelNames: ['chain', 'method', 'endpoint', 'kind'],
      registers,
    }),
    transfers: new Counter({ name: 'svc_ingest_transfers_total', help: 'Transfers into watched wallets stored', labelNames: ['chain'], registers }),
    leader: new Gauge({ name: 'svc_ingest_leader', help: '1 while this process holds the chain ingester lock', labelNames: ['chain'], registers }),
    blocks: new Counter({ name: 'svc_ingest_blocks_total', help: 'Blocks processed (checkpoint advances)', labelNames: ['chain'], registers }),
    watchedDeposits: new Gauge({
      name: 'svc_ingest_watched_deposit_addresses',
      help: 'Deposit addresses of open address-mode sessions the EVM ingester watches',
      labelNames: ['chain'],
      registers,
    }),
  };
  new Gauge({
    name: 'svc_ingest_seconds_since_head',
    help: 'Seconds since the last new head was seen',
    labelNames: ['chain'],
    registers,
    collect() {
      this.reset();
      for (const [chain, at] of lastHeadAt) this.set({ chain }, (Date.now() - at) / 1000);
    },
  });
  cache.set(registry, metrics);
  return metrics;
}

const solanaLag = new WeakMap<Registry, Gauge>();

/**
 * `svc_ingest_solana_lag_slots`, registered only by a Solana ingester (an EVM-only daemon does not
 * export it): slots between the newest slot seen and the slot the last completed pass started at.
 */
export function createSolanaLagGauge(registry: Registry): Gauge {
  let gauge = solanaLag.get(registry) ?? (registry.getSingleMetric('svc_ingest_solana_lag_slots') as Gauge | undefined);
  gauge ??= new Gauge({
    name: 'svc_ingest_solana_lag_slots',
    help: 'Slots between the newest slot seen (processed, over WebSocket; else confirmed) and the confirmed slot at the start of the last completed ingest pass; at rest with WebSocket about the 1-3 slot processed-to-confirmed gap',
    registers: [registry],
  });
  solanaLag.set(registry, gauge);
  return gauge;
}

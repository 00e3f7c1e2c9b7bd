import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createIngestMetrics, createSolanaLagGauge } from '../../src/ingest/metrics.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('every svc_ingest_* series the dashboard and the alert rules query is one the ingester exports', async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  createIngestMetrics(registry);
  const exported = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    exported.add(metric.name);
    if (metric.type === ('histogram' as never)) for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
  }
  const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'dashboards/ingest.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  const queried = new Set<string>();
  for (const panel of dashboard.panels)
    for (const target of panel.targets) for (const name of target.expr.match(/svc_ingest_[a-z_]+/g) ?? []) queried.add(name);
  for (const name of fs.readFileSync(path.join(root, 'dashboards/alerts.yml'), 'utf8').match(/svc_ingest_[a-z_]+/g) ?? []) queried.add(name);
  expect(queried.size).toBeGreaterThan(8);
  expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
});

test('the ingest metrics keep their names and labels: dashboards, alert rules and operators query them', async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  createIngestMetrics(registry);
  createSolanaLagGauge(registry);
  const shapes = (await registry.getMetricsAsJSON()).map((metric) => {
    const labels = (registry.getSingleMetric(metric.name) as unknown as { labelNames: string[] }).labelNames;
    return `${metric.type} ${metric.name}{${labels.join(',')}}`;
  });
  expect(shapes.sort()).toEqual([
    'counter svc_ingest_blocks_total{chain}',
    'counter svc_ingest_deep_reorgs_total{chain,rule}',
    'counter svc_ingest_reorgs_total{chain}',
    'counter svc_ingest_rpc_errors_total{chain,method,endpoint,kind}',
    'counter svc_ingest_transfers_total{chain}',
    'gauge svc_ingest_finalized_block{chain}',
    'gauge svc_ingest_head_block{chain}',
    'gauge svc_ingest_leader{chain}',
    'gauge svc_ingest_processed_block{chain}',
    'gauge svc_ingest_safe_block{chain}',
    'gauge svc_ingest_seconds_since_head{chain}',
    'gauge svc_ingest_solana_lag_slots{}',
    'gauge svc_ingest_watched_deposit_addresses{chain}',
    'histogram svc_ingest_reorg_depth_blocks{chain}',
    'histogram svc_ingest_rpc_request_duration_seconds{chain,method,endpoint}',
  ]);
});

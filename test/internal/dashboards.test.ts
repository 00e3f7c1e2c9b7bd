import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createEngineMetrics } from '../../src/engine/index.ts';
import { createDeliveryMetrics } from '../../src/delivery/metrics.ts';
import { createX402Metrics } from '../../src/x402/metrics.ts';
import { createDepositMetrics } from '../../src/deposits/metrics.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('every svc_engine_*, svc_delivery_*, svc_x402_* and svc_deposit_* series the payments dashboard and the alert rules query is one the daemon exports', async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  createEngineMetrics(registry);
  createDeliveryMetrics(registry);
  createX402Metrics(registry);
  createDepositMetrics(registry);
  const exported = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    exported.add(metric.name);
    if (metric.type === ('histogram' as never)) for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
  }
  const pattern = /svc_(?:engine|delivery|x402|deposit)_[a-z0-9_]+/g;
  const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'dashboards/payments.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  const queried = new Set<string>();
  for (const panel of dashboard.panels) for (const target of panel.targets) for (const name of target.expr.match(pattern) ?? []) queried.add(name);
  for (const name of fs.readFileSync(path.join(root, 'dashboards/alerts.yml'), 'utf8').match(pattern) ?? []) queried.add(name);
  expect(queried.size).toBeGreaterThanOrEqual(8);
  expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
});

test('the compose stack’s Grafana provisioning parses, points at its Prometheus and loads every dashboard, and each dashboard queries only series the daemon exports', async () => {
  const { parse } = await import('yaml');
  const { createIngestMetrics } = await import('../../src/ingest/metrics.ts');
  const registry = createMetricsRegistry();
  createEngineMetrics(registry);
  createDeliveryMetrics(registry);
  createIngestMetrics(registry);
  const exported = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    exported.add(metric.name);
    if (metric.type === ('histogram' as never)) for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
  }
  // Created by the Solana ingester itself (src/ingest/solana/index.ts), which needs an RPC to start.
  exported.add('svc_ingest_solana_lag_slots');
  expect(exported.has('svc_process_resident_memory_bytes')).toBe(true);

  const compose = path.join(root, 'deploy/compose');
  const datasources = parse(fs.readFileSync(path.join(compose, 'grafana/provisioning/datasources/prometheus.yaml'), 'utf8'));
  expect(datasources.datasources).toEqual([expect.objectContaining({ type: 'prometheus', url: 'http://prometheus:9090', isDefault: true })]);
  const providers = parse(fs.readFileSync(path.join(compose, 'grafana/provisioning/dashboards/svc-gateway.yaml'), 'utf8'));
  const grafana = parse(fs.readFileSync(path.join(compose, 'compose.yaml'), 'utf8'), { merge: true }).services.grafana;
  expect(grafana.volumes).toContain(`../../dashboards:${providers.providers[0].options.path}:ro`);

  const files = fs.readdirSync(path.join(root, 'dashboards')).filter((file) => file.endsWith('.json'));
  expect(files.sort()).toEqual(['ingest.json', 'payments.json']);
  for (const file of files) {
    const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'dashboards', file), 'utf8')) as {
      uid: string;
      panels: { datasource: { uid: string }; targets: { expr: string }[] }[];
      templating: { list: { name: string; query: string }[] };
    };
    expect(dashboard.uid, file).toBeTruthy();
    // Every panel uses the dashboard's datasource variable, which picks the provisioned Prometheus.
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', query: 'prometheus' }));
    const queried = new Set<string>();
    for (const panel of dashboard.panels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's datasource variable, literally
      expect(panel.datasource.uid, `${file}: a panel`).toBe('${datasource}');
      for (const target of panel.targets) for (const name of target.expr.match(/svc_[a-z_]+/g) ?? []) queried.add(name);
    }
    expect(queried.size, file).toBeGreaterThan(5);
    expect(
      [...queried].filter((name) => !exported.has(name)),
      file,
    ).toEqual([]);
  }
});

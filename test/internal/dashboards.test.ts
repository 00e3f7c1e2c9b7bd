import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createEngineMetrics } from '../../src/engine/index.ts';
import { createDeliveryMetrics } from '../../src/delivery/metrics.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('every svc_engine_* and svc_delivery_* series the payments dashboard and the alert rules query is one the daemon exports', async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  createEngineMetrics(registry);
  createDeliveryMetrics(registry);
  const exported = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    exported.add(metric.name);
    if (metric.type === ('histogram' as never)) for (const suffix of ['_bucket', '_count', '_sum']) exported.add(metric.name + suffix);
  }
  const pattern = /svc_(?:engine|delivery)_[a-z_]+/g;
  const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'dashboards/payments.json'), 'utf8')) as { panels: { targets: { expr: string }[] }[] };
  const queried = new Set<string>();
  for (const panel of dashboard.panels) for (const target of panel.targets) for (const name of target.expr.match(pattern) ?? []) queried.add(name);
  for (const name of fs.readFileSync(path.join(root, 'dashboards/alerts.yml'), 'utf8').match(pattern) ?? []) queried.add(name);
  expect(queried.size).toBeGreaterThanOrEqual(8);
  expect([...queried].filter((name) => !exported.has(name))).toEqual([]);
});

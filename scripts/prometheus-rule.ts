/**
 * Writes deploy/kubernetes/base/prometheusrule.yaml, the Prometheus Operator's PrometheusRule,
 * from dashboards/alerts.yml, the one source of the alert rules (the compose stack mounts that
 * file as is). Run after changing the alerts: `npm run deploy:rules`; test/ops/kubernetes.test.ts
 * regenerates it and fails on any difference.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Document, parseDocument, type YAMLMap } from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ALERTS_FILE = path.join(ROOT, 'dashboards/alerts.yml');
export const PROMETHEUS_RULE_FILE = path.join(ROOT, 'deploy/kubernetes/base/prometheusrule.yaml');

/** The PrometheusRule text for an alerts file's text: its `groups`, comments kept, under `spec`. */
export function renderPrometheusRule(alertsText: string): string {
  const source = parseDocument(alertsText);
  if (source.errors.length > 0) throw new Error(`dashboards/alerts.yml does not parse: ${source.errors[0]!.message}`);
  const groups = source.get('groups', true);
  if (!groups) throw new Error('dashboards/alerts.yml has no groups');
  const rule = new Document({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'svc-gateway', labels: { 'app.kubernetes.io/name': 'svc-gateway' } },
    spec: {},
  });
  (rule.get('spec', true) as YAMLMap).set('groups', groups);
  rule.commentBefore =
    ' GENERATED from dashboards/alerts.yml by scripts/prometheus-rule.ts (npm run deploy:rules): edit\n' +
    ' that file, not this one. The Prometheus Operator loads it when its ruleSelector matches these\n' +
    " labels (add your Prometheus resource's, e.g. release: prometheus, in an overlay).";
  return rule.toString({ lineWidth: 0 });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(PROMETHEUS_RULE_FILE, renderPrometheusRule(fs.readFileSync(ALERTS_FILE, 'utf8')));
  console.log(`wrote ${path.relative(ROOT, PROMETHEUS_RULE_FILE)}`);
}

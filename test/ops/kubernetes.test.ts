import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { stringify } from 'yaml';
import { CHAIN_NAMES, VARIABLES, relayerKeyFileVariableName, relayerKeyVariableName, rpcVariableNames } from '../../src/internal/config.ts';
import { ALERTS_FILE, PROMETHEUS_RULE_FILE, ROOT, renderPrometheusRule } from '../../scripts/prometheus-rule.ts';
import { readYamlDocuments, renderKustomization, type K8sObject } from '../helpers/kustomize.ts';
import { skipUnlessInstalled } from '../helpers/toolchains.ts';

/** Chains whose relayer key the daemon accepts (EIP-3009 USDC; src/internal/config.ts refuses the others). */
const X402_CHAINS = CHAIN_NAMES.filter((chain) => chain !== 'solana' && chain !== 'bsc');
/** Chains whose relayer key pays deposit sweeps (every EVM chain). */
const EVM_CHAINS = CHAIN_NAMES.filter((chain) => chain !== 'solana');

/**
 * The Kubernetes manifests (deploy/kubernetes), rendered per overlay as `kubectl apply -k` would,
 * each object validated offline against the Kubernetes JSON schemas (kubernetes-models and
 * @kubernetes-models/prometheus-operator, pinned), then checked for what the schemas cannot see:
 * probes on the daemon's real endpoints, references that resolve, the alert rules generated from
 * their one source, and a runbook section for every alert.
 */
const OVERLAYS = ['managed-postgres', 'cloudnativepg'];
const overlayDir = (name: string) => path.join(ROOT, 'deploy/kubernetes/overlays', name);
const ROLES = ['api', 'ingest', 'worker'] as const;
/** Custom resources without a schema package here: checked by the assertions below only. */
const NO_SCHEMA = new Set(['postgresql.cnpg.io/v1/Cluster']);

async function validate(object: K8sObject): Promise<void> {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  if (NO_SCHEMA.has(`${object.apiVersion}/${object.kind}`)) return;
  const module =
    group === 'monitoring.coreos.com'
      ? await import(`@kubernetes-models/prometheus-operator/${group}/${version}/${object.kind}`)
      : await import(`kubernetes-models/${group ? `${group}/` : ''}${version}/${object.kind}`);
  new module[object.kind](object).validate();
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}

/** The image's user id, from the Dockerfile's useradd. */
const imageUid = Number(/useradd[^\n]*--uid (\d+)/.exec(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))![1]);

describe.each(OVERLAYS)('overlay %s', (overlay) => {
  const objects = renderKustomization(overlayDir(overlay));

  test('every object is valid against its Kubernetes schema and lands in the svc namespace', async () => {
    expect(objects.length).toBeGreaterThanOrEqual(14);
    for (const object of objects) {
      await expect(validate(object), `${object.kind} ${object.metadata.name}`).resolves.toBeUndefined();
      if (object.kind !== 'Namespace') expect(object.metadata.namespace, `${object.kind} ${object.metadata.name}`).toBe('svc');
    }
    // The validators do reject a wrong manifest (they are not a no-op).
    const broken = structuredClone(find(objects, 'Deployment', 'svc-gateway-api'));
    broken.spec.replicas = 'two';
    await expect(validate(broken)).rejects.toThrow();
  });

  test('one Deployment per role running the image as its non-root user, with probes on the daemon’s real endpoints and measured requests', () => {
    for (const role of ROLES) {
      const deployment = find(objects, 'Deployment', `svc-gateway-${role}`);
      const pod = deployment.spec.template.spec;
      expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: imageUid });
      const [container] = pod.containers;
      expect(container.image).toBe('registry.example.com/svc-gateway:0.1.0');
      expect(container.args).toEqual(['start', '--role', role]);
      expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      const ports = new Map((container.ports as { name: string; containerPort: number }[]).map((port) => [port.name, port.containerPort]));
      expect(ports.get('metrics')).toBe(9464);
      const probePort = role === 'api' ? 'http' : 'metrics';
      expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: probePort });
      expect(container.livenessProbe.httpGet).toEqual({ path: role === 'api' ? '/api/v1/health' : '/health', port: probePort });
      expect(container.startupProbe.httpGet.port).toBe(probePort);
      expect(ports.has(probePort)).toBe(true);
      expect(container.resources.requests.cpu).toMatch(/^\d+m$/);
      expect(container.resources.requests.memory).toMatch(/^\d+Mi$/);
      expect(container.resources.limits.memory).toMatch(/^\d+Mi$/);
      // Every ConfigMap, Secret and key it reads exists (a CloudNativePG Cluster makes <name>-app).
      for (const source of container.envFrom) {
        if (source.configMapRef) find(objects, 'ConfigMap', source.configMapRef.name);
        if (source.secretRef) find(objects, 'Secret', source.secretRef.name);
      }
      for (const variable of container.env ?? []) {
        const ref = variable.valueFrom?.secretKeyRef;
        if (!ref) continue;
        const cluster = objects.find((object) => object.kind === 'Cluster' && `${object.metadata.name}-app` === ref.name);
        if (cluster) expect(ref.key).toBe('uri');
        else expect(Object.keys(find(objects, 'Secret', ref.name).stringData ?? {})).toContain(ref.key);
      }
      const pdb = objects.find((object) => object.kind === 'PodDisruptionBudget' && object.spec.selector.matchLabels['app.kubernetes.io/component'] === role);
      expect(pdb?.spec.minAvailable, `PodDisruptionBudget of ${role}`).toBe(1);
    }
    expect(find(objects, 'Deployment', 'svc-gateway-ingest').spec.replicas).toBe(2);
    const hpa = find(objects, 'HorizontalPodAutoscaler', 'svc-gateway-api');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'svc-gateway-api' });
  });

  test('the configuration names only variables the daemon reads; the secrets give a database, the encryption key and every chain’s RPC URLs', () => {
    const known = new Set([
      ...Object.values(VARIABLES).map((variable) => variable.name),
      ...CHAIN_NAMES.flatMap((chain) => Object.values(rpcVariableNames(chain))),
      ...CHAIN_NAMES.map(relayerKeyVariableName),
      ...CHAIN_NAMES.map(relayerKeyFileVariableName),
    ]);
    const config = find(objects, 'ConfigMap', 'svc-gateway-config');
    expect(Object.keys(config.data).filter((name) => !known.has(name))).toEqual([]);
    expect(config.data).toMatchObject({ SVC_STATELESS: 'true', SVC_METRICS_PORT: '9464', HOST: '0.0.0.0' });
    const secret = find(objects, 'Secret', 'svc-gateway-secrets');
    const keys = Object.keys(secret.stringData);
    expect(keys.filter((name) => !known.has(name))).toEqual([]);
    expect(keys).toContain('SVC_ENCRYPTION_KEY');
    for (const chain of CHAIN_NAMES) expect(keys).toContain(rpcVariableNames(chain).http);
    // Relayer keys never come as environment variables (the next test: files, api pods only).
    for (const chain of CHAIN_NAMES) expect(keys).not.toContain(relayerKeyVariableName(chain));
    for (const role of ROLES) {
      const env = (find(objects, 'Deployment', `svc-gateway-${role}`).spec.template.spec.containers[0].env ?? []) as { name: string }[];
      expect(env.filter((variable) => !known.has(variable.name))).toEqual([]);
    }
    const databaseFromCluster = find(objects, 'Deployment', 'svc-gateway-api').spec.template.spec.containers[0].env?.some(
      (variable: { name: string }) => variable.name === 'DATABASE_URL',
    );
    expect(keys.includes('DATABASE_URL') !== Boolean(databaseFromCluster), 'DATABASE_URL comes from exactly one place').toBe(true);
  });

  test('relayer keys are files from their own Secret, mounted read-only in the api pods (x402) and the worker pods (deposit sweeps), never in ingest pods', () => {
    const secret = find(objects, 'Secret', 'svc-gateway-relayer-keys');
    expect(Object.keys(secret.stringData).sort()).toEqual([...EVM_CHAINS].sort());
    // api: the x402 chains only (bsc's key pays sweeps alone); worker: every EVM chain.
    for (const [role, chains] of [
      ['api', X402_CHAINS],
      ['worker', EVM_CHAINS],
    ] as const) {
      const pod = find(objects, 'Deployment', `svc-gateway-${role}`).spec.template.spec;
      const volume = pod.volumes.find((entry: { secret?: { secretName: string } }) => entry.secret?.secretName === 'svc-gateway-relayer-keys');
      expect(volume.secret.defaultMode, role).toBe(0o440);
      // The files belong to the svc user's group (the image's user reads them, nobody writes).
      expect(pod.securityContext.fsGroup, role).toBe(imageUid);
      const mount = pod.containers[0].volumeMounts.find((entry: { name: string }) => entry.name === volume.name);
      expect(mount.readOnly, role).toBe(true);
      const env = new Map((pod.containers[0].env as { name: string; value?: string }[]).map((variable) => [variable.name, variable.value]));
      expect([...env.keys()].filter((name) => /RELAYER/.test(name)).sort(), role).toEqual(chains.map(relayerKeyFileVariableName).sort());
      for (const chain of chains) expect(env.get(relayerKeyFileVariableName(chain))).toBe(`${mount.mountPath}/${chain}`);
      const files = volume.secret.items?.map((item: { key: string; path: string }) => item.path) ?? Object.keys(secret.stringData);
      expect([...files].sort(), role).toEqual([...chains].sort());
    }
    const ingest = find(objects, 'Deployment', 'svc-gateway-ingest').spec.template.spec;
    expect(JSON.stringify(ingest)).not.toMatch(/relayer/i);
  });

  test('a NetworkPolicy per role: ingress only from what needs it, egress to DNS, Postgres and public addresses only', () => {
    const policies = objects.filter((object) => object.kind === 'NetworkPolicy');
    const selects = (policy: K8sObject, labels: Record<string, string>) =>
      Object.entries(policy.spec.podSelector.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
    const prometheusOnly = [
      {
        from: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } }],
        ports: [{ protocol: 'TCP', port: 'metrics' }],
      },
    ];
    for (const role of ROLES) {
      const labels = find(objects, 'Deployment', `svc-gateway-${role}`).spec.template.metadata.labels;
      const own = find(objects, 'NetworkPolicy', `svc-gateway-${role}`);
      expect(selects(own, labels)).toBe(true);
      // Every policy selecting these pods allows ingress from nothing more than this one.
      for (const policy of policies.filter((candidate) => selects(candidate, labels) && candidate !== own)) expect(policy.spec.ingress).toBeUndefined();
      expect(own.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(own.spec.ingress).toEqual(role === 'api' ? [{ ports: [{ protocol: 'TCP', port: 'http' }] }, ...prometheusOnly] : prometheusOnly);
      const egress = own.spec.egress as { to: any[]; ports?: { protocol: string; port: number }[] }[];
      expect(egress).toHaveLength(3);
      const [dns, postgres, world] = egress;
      expect(dns!.to).toEqual([
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } },
      ]);
      expect(dns!.ports).toEqual([
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ]);
      expect(postgres!.ports).toEqual([{ protocol: 'TCP', port: 5432 }]);
      expect(world!.ports).toBeUndefined();
      const v4 = world!.to.find((peer) => peer.ipBlock.cidr === '0.0.0.0/0').ipBlock.except;
      for (const internal of ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8'])
        expect(v4).toContain(internal);
      expect(world!.to.find((peer) => peer.ipBlock.cidr === '::/0').ipBlock.except).toEqual(['fc00::/7', 'fe80::/10']);
    }
    if (overlay === 'cloudnativepg') {
      const database = find(objects, 'NetworkPolicy', 'svc-gateway-database');
      const cluster = objects.find((object) => object.kind === 'Cluster')!;
      expect(database.spec.egress).toEqual([
        { to: [{ podSelector: { matchLabels: { 'cnpg.io/cluster': cluster.metadata.name } } }], ports: [{ protocol: 'TCP', port: 5432 }] },
      ]);
      // Synchronous replication: a failover loses no acknowledged write (docs/reliability.md).
      expect(cluster.spec.minSyncReplicas).toBeGreaterThanOrEqual(1);
      expect(cluster.spec.maxSyncReplicas).toBeLessThan(cluster.spec.instances);
    }
  });

  test('Services select the pods, and the ServiceMonitor scrapes every role’s metrics port as job svc-gateway', () => {
    const pods = objects
      .filter((object) => object.kind === 'Deployment')
      .map((object) => ({
        labels: object.spec.template.metadata.labels,
        ports: object.spec.template.spec.containers[0].ports.map((port: { name: string }) => port.name),
      }));
    for (const service of objects.filter((object) => object.kind === 'Service')) {
      const selected = pods.filter((pod) => Object.entries(service.spec.selector).every(([key, value]) => pod.labels[key] === value));
      expect(selected.length, service.metadata.name).toBeGreaterThan(0);
      for (const port of service.spec.ports) for (const pod of selected) expect(pod.ports).toContain(port.targetPort);
    }
    expect(pods.length).toBe(3);
    const monitor = find(objects, 'ServiceMonitor', 'svc-gateway');
    const metrics = objects.find(
      (object) =>
        object.kind === 'Service' && Object.entries(monitor.spec.selector.matchLabels).every(([key, value]) => object.metadata.labels?.[key] === value),
    )!;
    expect(metrics.metadata.name).toBe('svc-gateway-metrics');
    expect(metrics.metadata.labels![monitor.spec.jobLabel]).toBe('svc-gateway');
    expect(Object.keys(metrics.spec.selector)).toEqual(['app.kubernetes.io/name']);
    expect(metrics.spec.ports.map((port: { name: string }) => port.name)).toContain(monitor.spec.endpoints[0].port);
  });
});

describe('alert rules', () => {
  test('the PrometheusRule is generated from dashboards/alerts.yml and is current (npm run deploy:rules)', () => {
    expect(fs.readFileSync(PROMETHEUS_RULE_FILE, 'utf8')).toBe(renderPrometheusRule(fs.readFileSync(ALERTS_FILE, 'utf8')));
    const [rule] = readYamlDocuments(PROMETHEUS_RULE_FILE);
    expect(rule.spec.groups).toEqual(readYamlDocuments(ALERTS_FILE)[0].groups);
  });

  test('promtool check rules passes on the generated PrometheusRule’s rules', (context) => {
    const promtool = spawnSync('promtool', ['--version']);
    if (promtool.error) {
      skipUnlessInstalled(context, `promtool is not installed (apt-get install prometheus; .ci/run installs it): ${promtool.error.message}`);
      return;
    }
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-rules-')), 'rules.yml');
    fs.writeFileSync(file, stringify({ groups: readYamlDocuments(PROMETHEUS_RULE_FILE)[0].spec.groups }));
    const output = execFileSync('promtool', ['check', 'rules', file], { encoding: 'utf8' });
    expect(output).toContain('SUCCESS: 14 rules found');
  });

  test('every alert links a runbook section that exists and says what it means, how to confirm it and what to do', () => {
    const runbooks = fs.readFileSync(path.join(ROOT, 'docs/runbooks.md'), 'utf8');
    // GitHub's anchors: a heading lower-cased, spaces to dashes, other punctuation dropped.
    const sections = new Map<string, string>();
    for (const part of runbooks.split(/^## /m).slice(1)) {
      const heading = part.split('\n')[0]!.trim();
      sections.set(
        heading
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
        part,
      );
    }
    const rules = readYamlDocuments(ALERTS_FILE)[0].groups.flatMap((group: { rules: unknown[] }) => group.rules) as {
      alert: string;
      annotations: Record<string, string>;
    }[];
    expect(rules).toHaveLength(14);
    for (const rule of rules) {
      const url = rule.annotations.runbook_url;
      expect(url, rule.alert).toBe(`docs/runbooks.md#${rule.alert.toLowerCase()}`);
      const section = sections.get(url!.split('#')[1]!);
      expect(section, `runbook section for ${rule.alert}`).toBeDefined();
      for (const part of ['**Means**', '**Confirm**', '**Do**']) expect(section, `${rule.alert}: ${part}`).toContain(part);
    }
  });
});

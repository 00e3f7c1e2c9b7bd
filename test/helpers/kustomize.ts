import fs from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** A Kubernetes object as parsed from YAML. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [key: string]: any;
}

/** The kustomization fields this renderer implements; any other field fails the render, so a manifest never silently relies on more. */
const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'images', 'patches']);
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition']);

/** Every YAML document of a file, as objects (empty documents dropped; `<<` merge keys applied, as compose does). */
export function readYamlDocuments(file: string): any[] {
  const documents = parseAllDocuments(fs.readFileSync(file, 'utf8'), { merge: true });
  for (const document of documents) if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]!.message}`);
  return documents.map((document) => document.toJS()).filter((value) => value !== null && value !== undefined);
}

const isObject = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Strategic merge as kustomize applies it to the fields the overlays patch: maps merge key by
 * key; lists of maps that all carry `name` (containers, env, ports, volumes) merge by name and
 * gain new entries; any other list or value is replaced.
 */
export function strategicMerge(base: unknown, patch: unknown): unknown {
  if (Array.isArray(patch) && Array.isArray(base) && [...base, ...patch].every((item) => isObject(item) && typeof item.name === 'string')) {
    const merged = base.map((item) => {
      const change = patch.find((entry) => entry.name === item.name);
      return change ? strategicMerge(item, change) : item;
    });
    for (const entry of patch) if (!base.some((item) => item.name === entry.name)) merged.push(entry);
    return merged;
  }
  if (isObject(base) && isObject(patch)) {
    const merged: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(patch)) merged[key] = key in base ? strategicMerge(base[key], value) : value;
    return merged;
  }
  return patch;
}

function matches(object: K8sObject, target: { kind?: string; name?: string; labelSelector?: string }): boolean {
  if (target.kind && object.kind !== target.kind) return false;
  if (target.name && object.metadata.name !== target.name) return false;
  for (const pair of target.labelSelector?.split(',') ?? []) {
    const [key, value] = pair.split('=').map((part) => part.trim());
    if (object.metadata.labels?.[key!] !== value) return false;
  }
  return true;
}

function podSpecs(object: K8sObject): any[] {
  return object.spec?.template?.spec ? [object.spec.template.spec] : [];
}

/**
 * Renders a kustomization directory the way `kubectl apply -k` would for the subset of
 * kustomize the manifests use (resources, namespace, images, patches with path and target):
 * the machines that run the tests have neither kustomize nor kubectl.
 */
export function renderKustomization(dir: string): K8sObject[] {
  const kustomization = readYamlDocuments(path.join(dir, 'kustomization.yaml'))[0] as Record<string, any>;
  const unsupported = Object.keys(kustomization).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length > 0) throw new Error(`${dir}/kustomization.yaml uses ${unsupported.join(', ')}, which the test renderer does not implement`);
  let objects: K8sObject[] = [];
  for (const resource of (kustomization.resources ?? []) as string[]) {
    const resolved = path.join(dir, resource);
    objects.push(...(fs.statSync(resolved).isDirectory() ? renderKustomization(resolved) : (readYamlDocuments(resolved) as K8sObject[])));
  }
  for (const entry of (kustomization.patches ?? []) as { path: string; target?: { kind?: string; name?: string; labelSelector?: string } }[]) {
    const patch = readYamlDocuments(path.join(dir, entry.path))[0] as K8sObject;
    const target = entry.target ?? { kind: patch.kind, name: patch.metadata.name };
    const { name: _ignored, ...metadata } = patch.metadata;
    const body = { ...patch, metadata };
    let applied = 0;
    objects = objects.map((object) => {
      if (!matches(object, target)) return object;
      applied++;
      return strategicMerge(object, body) as K8sObject;
    });
    if (applied === 0) throw new Error(`${dir}: patch ${entry.path} matches no resource`);
  }
  for (const image of (kustomization.images ?? []) as { name: string; newName?: string; newTag?: string }[]) {
    for (const object of objects) {
      for (const spec of podSpecs(object)) {
        for (const container of [...(spec.containers ?? []), ...(spec.initContainers ?? [])]) {
          const name = String(container.image).split(/[:@]/)[0];
          if (name === image.name) container.image = `${image.newName ?? image.name}${image.newTag ? `:${image.newTag}` : ''}`;
        }
      }
    }
  }
  if (kustomization.namespace) {
    for (const object of objects) if (!CLUSTER_SCOPED.has(object.kind)) object.metadata = { ...object.metadata, namespace: kustomization.namespace };
  }
  return objects;
}

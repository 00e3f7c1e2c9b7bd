/**
 * The OpenAPI document turned into a small, language-neutral model of the client: named object
 * types, named enums, and resources with their operations. Every emitter (emit-node.ts,
 * emit-python.ts; Go and Rust next) reads only this model, so the decisions about names, paging
 * and optional bodies are made once, here and in operations.ts.
 *
 * The daemon's document is inline (no `components.schemas`): every type name comes from the
 * naming table, and shapes that are equal apart from their docs share one name.
 */
import { NESTED_NAMES, OPERATIONS, RESOURCES } from './operations.ts';

/** A field's or parameter's type. */
export type TypeRef =
  | { kind: 'string'; format?: string }
  | { kind: 'integer' }
  | { kind: 'number' }
  | { kind: 'boolean' }
  | { kind: 'literal'; value: string | number | boolean }
  | { kind: 'enum'; name: string }
  | { kind: 'object'; name: string }
  | { kind: 'array'; items: TypeRef }
  | { kind: 'map'; values: TypeRef }
  | { kind: 'nullable'; inner: TypeRef }
  | { kind: 'unknown' };

export interface Field {
  /** The JSON name, exactly as on the wire. */
  name: string;
  required: boolean;
  type: TypeRef;
  doc?: string;
}

export interface ObjectType {
  name: string;
  doc?: string;
  fields: Field[];
}

export interface EnumType {
  name: string;
  doc?: string;
  values: string[];
}

/** What a call returns: one object, a `{data}` list, or a `{data, hasMore, nextCursor}` page. */
export type Returns = { kind: 'object'; type: string } | { kind: 'list'; item: string } | { kind: 'page'; item: string };

export interface Operation {
  operationId: string;
  resource: string;
  /** camelCase method name. */
  method: string;
  httpMethod: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Relative to the base URL (which ends in `/api/v1`), with `{param}` placeholders. */
  path: string;
  summary?: string;
  description?: string;
  pathParams: Field[];
  /** The query parameters' type (an object type), when there are any. */
  query?: string;
  /** The body's type; `optional` when the request may omit it. */
  body?: { type: string; optional: boolean };
  returns: Returns;
  status: number;
  /** POST: the client sends an Idempotency-Key and keeps it across retries. */
  idempotent: boolean;
  /** False for the few routes that need no API key. */
  authenticated: boolean;
}

export interface Resource {
  name: string;
  doc: string;
  operations: Operation[];
}

export interface ApiModel {
  title: string;
  version: string;
  /** The document's server URL with `/api/v1`: the clients' default base URL. */
  defaultBaseUrl: string;
  objects: ObjectType[];
  enums: EnumType[];
  resources: Resource[];
  /** Webhook event kinds (the values of `enabledEvents` but `*`), for the typed verifier. */
  eventTypes: string[];
}

type Schema = Record<string, any>;
type Document = { info: { title: string; version: string }; servers?: { url: string }[]; paths: Record<string, Record<string, Schema>> };

/** The prefix of the merchant API; other paths (checkout pages, payment-link redirects) are for browsers. */
const API_PREFIX = '/api/v1';

/** Builds the model; throws when the document has an operation the naming table does not name. */
export function buildModel(document: Document): ApiModel {
  const objects = new Map<string, ObjectType>();
  const enums = new Map<string, EnumType>();
  const shapeNames = new Map<string, string>();
  const enumNames = new Map<string, string>();

  const pascal = (text: string) => text.replace(/(^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_m, _sep, letter: string) => letter.toUpperCase());

  function enumRef(schema: Schema, name: string): TypeRef {
    const values = schema.enum as unknown[];
    if (values.length === 1) return { kind: 'literal', value: values[0] as string | number | boolean };
    const key = JSON.stringify([...(values as string[])].sort());
    const existing = enumNames.get(key);
    if (existing) return { kind: 'enum', name: existing };
    if (enums.has(name)) throw new Error(`enum name ${name} is taken by other values; add a NESTED_NAMES entry`);
    enums.set(name, { name, values: values as string[], ...(schema.description ? { doc: schema.description } : {}) });
    enumNames.set(key, name);
    return { kind: 'enum', name };
  }

  /** The type of `schema`, naming any object or enum inside it `name` (or what it already is). */
  function typeOf(schema: Schema | undefined, name: string): TypeRef {
    if (!schema || Object.keys(schema).length === 0) return { kind: 'unknown' };
    if (schema.anyOf) {
      const variants = (schema.anyOf as Schema[]).filter((variant) => variant.type !== 'null');
      const nullable = variants.length < (schema.anyOf as Schema[]).length;
      if (variants.length !== 1) throw new Error(`${name}: anyOf of ${variants.length} non-null types is not supported`);
      const inner = typeOf({ ...variants[0], description: variants[0]!.description ?? schema.description }, name);
      return nullable ? { kind: 'nullable', inner } : inner;
    }
    if (schema.const !== undefined) return { kind: 'literal', value: schema.const };
    if (schema.enum) return enumRef(schema, name);
    switch (schema.type) {
      case 'string':
        return schema.format ? { kind: 'string', format: schema.format } : { kind: 'string' };
      case 'integer':
        return { kind: 'integer' };
      case 'number':
        return { kind: 'number' };
      case 'boolean':
        return { kind: 'boolean' };
      case 'array':
        return { kind: 'array', items: typeOf(schema.items, name) };
      case 'object':
        if (!schema.properties) {
          const values = typeof schema.additionalProperties === 'object' ? typeOf(schema.additionalProperties, `${name}Value`) : { kind: 'unknown' as const };
          return { kind: 'map', values };
        }
        return { kind: 'object', name: objectNamed(schema, name) };
      default:
        throw new Error(`${name}: schema type ${JSON.stringify(schema.type)} is not supported`);
    }
  }

  /** Registers the object `schema` as `name`, or returns the name an equal shape already has. */
  function objectNamed(schema: Schema, name: string, explicit = false): string {
    const fields: Field[] = Object.entries(schema.properties as Record<string, Schema>).map(([field, fieldSchema]) => ({
      name: field,
      required: ((schema.required as string[] | undefined) ?? []).includes(field),
      type: typeOf(fieldSchema, NESTED_NAMES[`${name}.${field}`] ?? `${name}${pascal(field)}`),
      ...(fieldSchema.description ? { doc: fieldSchema.description as string } : {}),
    }));
    const shape = JSON.stringify(fields.map(({ doc: _doc, ...rest }) => rest));
    const existing = objects.get(name);
    if (existing) {
      if (JSON.stringify(existing.fields.map(({ doc: _doc, ...rest }) => rest)) !== shape) throw new Error(`type ${name} is given to two different shapes; rename one in operations.ts`);
      return name;
    }
    const same = shapeNames.get(shape);
    if (same && !explicit) return same;
    objects.set(name, { name, fields, ...(schema.description ? { doc: schema.description as string } : {}) });
    if (!same) shapeNames.set(shape, name);
    return name;
  }

  const byId = new Map<string, { path: string; method: string; operation: Schema }>();
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!path.startsWith(`${API_PREFIX}/`)) continue;
      if (!OPERATIONS[operation.operationId]) {
        throw new Error(`${method.toUpperCase()} ${path} (operationId ${operation.operationId}) has no client name: add it to clients/scripts/operations.ts`);
      }
      byId.set(operation.operationId, { path, method, operation });
    }
  }

  const resources = new Map<string, Resource>(Object.entries(RESOURCES).map(([name, doc]) => [name, { name, doc, operations: [] }]));
  for (const [operationId, naming] of Object.entries(OPERATIONS)) {
    const found = byId.get(operationId);
    if (!found) throw new Error(`operations.ts names ${operationId}, which the document no longer has`);
    const { path, method, operation } = found;
    const resource = resources.get(naming.resource);
    if (!resource) throw new Error(`resource ${naming.resource} of ${operationId} is not in RESOURCES`);

    const [status, response] = Object.entries(operation.responses as Record<string, Schema>).find(([code]) => code.startsWith('2'))!;
    const responseSchema = response.content?.['application/json']?.schema as Schema;
    const returns = returnsOf(responseSchema, naming.returns, operationId);

    const parameters = (operation.parameters ?? []) as Schema[];
    const pathParams = parameters
      .filter((parameter) => parameter.in === 'path')
      .sort((a, b) => path.indexOf(`{${a.name}}`) - path.indexOf(`{${b.name}}`))
      .map((parameter) => ({ name: parameter.name as string, required: true, type: typeOf(parameter.schema, `${naming.returns}Id`), ...(parameter.description ? { doc: parameter.description } : {}) }));
    const queryParams = parameters.filter((parameter) => parameter.in === 'query');
    let query: string | undefined;
    if (queryParams.length > 0) {
      if (!naming.query) throw new Error(`${operationId} takes query parameters: give operations.ts a query type name`);
      const properties = Object.fromEntries(queryParams.map((parameter) => [parameter.name, { ...parameter.schema, description: parameter.description }]));
      query = objectNamed({ type: 'object', properties, required: queryParams.filter((p) => p.required).map((p) => p.name) }, naming.query, true);
    }

    let body: Operation['body'];
    const bodySchema = operation.requestBody?.content?.['application/json']?.schema as Schema | undefined;
    if (bodySchema) {
      if (!naming.body) throw new Error(`${operationId} takes a body: give operations.ts a body type name`);
      const variants = bodySchema.anyOf ? (bodySchema.anyOf as Schema[]).filter((variant) => variant.type !== 'null') : [bodySchema];
      const objectSchema: Schema = { ...variants[0]!, description: variants[0]!.description ?? bodySchema.description };
      const type = objectNamed(objectSchema, naming.body, true);
      const optional = Boolean(bodySchema.anyOf) || ((objectSchema.required as string[] | undefined) ?? []).length === 0;
      body = { type, optional };
    }

    resource.operations.push({
      operationId,
      resource: naming.resource,
      method: naming.method,
      httpMethod: method.toUpperCase() as Operation['httpMethod'],
      path: path.slice(API_PREFIX.length).replace(/:(\w+)/g, '{$1}'),
      ...(operation.summary ? { summary: operation.summary } : {}),
      ...(operation.description ? { description: operation.description } : {}),
      pathParams,
      ...(query ? { query } : {}),
      ...(body ? { body } : {}),
      returns,
      status: Number(status),
      idempotent: method === 'post',
      authenticated: !(Array.isArray(operation.security) && operation.security.length === 0),
    });
  }

  function returnsOf(schema: Schema, name: string, operationId: string): Returns {
    if (!schema || schema.type !== 'object' || !schema.properties) throw new Error(`${operationId}: the response is not a JSON object`);
    const keys = Object.keys(schema.properties).sort().join(',');
    const items = schema.properties.data?.items as Schema | undefined;
    if (keys === 'data,hasMore,nextCursor' && items) return { kind: 'page', item: itemName(items, name) };
    if (keys === 'data' && items) return { kind: 'list', item: itemName(items, name) };
    return { kind: 'object', type: objectNamed(schema, name, true) };
  }

  function itemName(items: Schema, name: string): string {
    if (items.type !== 'object' || !items.properties) throw new Error(`${name}: list items must be objects`);
    return objectNamed(items, name, true);
  }

  const webhookBody = byId.get('postWebhooks')?.operation.requestBody?.content?.['application/json']?.schema as Schema | undefined;
  const eventTypes = ((webhookBody?.properties?.enabledEvents?.items?.enum ?? []) as string[]).filter((kind) => kind !== '*');
  const server = document.servers?.[0]?.url ?? 'http://127.0.0.1:8080';

  return {
    title: document.info.title,
    version: document.info.version,
    defaultBaseUrl: `${server.replace(/\/$/, '')}${API_PREFIX}`,
    objects: [...objects.values()],
    enums: [...enums.values()],
    resources: [...resources.values()].filter((resource) => resource.operations.length > 0),
    eventTypes,
  };
}

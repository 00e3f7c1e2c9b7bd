/**
 * Requests of the fuzzing run (bench/chaos/fuzz.ts), generated from the daemon's own OpenAPI
 * document: every operation, on both interfaces (`/api/v1` with Bearer, `/v1` with X-API-Key),
 * with every kind of key (live, test, read-only, another merchant's, revoked, malformed, none),
 * path, query, header and body values from fuzzValues.ts, and the wrong content types.
 */
import fc from 'fast-check';
import type { KeyRing } from './apiAudit.ts';
import { fuzzBody, fuzzValue, oddString, type IdPool } from './fuzzValues.ts';

type Schema = Record<string, any>;

/** One operation of the document. */
export interface Operation {
  method: string;
  /** The path template, `/api/v1/payments/{id}`. */
  template: string;
  parameters: Array<{ in: 'path' | 'query' | 'header'; name: string; required: boolean; schema: Schema }>;
  body?: Schema;
}

/** A request as sent. */
export interface FuzzRequest {
  method: string;
  /** Which operation it was made for (`POST /api/v1/payments`). */
  operation: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** Every operation in `document`. */
export function operationsOf(document: { paths: Record<string, Record<string, Schema>> }): Operation[] {
  const operations: Operation[] = [];
  for (const [template, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      operations.push({
        method: method.toUpperCase(),
        template,
        parameters: (operation.parameters ?? []).map((p: Schema) => ({ in: p.in, name: p.name, required: Boolean(p.required), schema: p.schema ?? {} })),
        body: operation.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return operations;
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/octet-stream',
  'application/merge-patch+json',
  '*/*',
  'garbage',
];

type KeyKind = keyof Omit<KeyRing, 'merchantId' | 'otherMerchantId'> | 'none' | 'malformed';
const KEY_KINDS: KeyKind[] = ['live', 'test', 'readOnly', 'liveReadOnly', 'otherMerchant', 'revoked', 'none', 'malformed'];

/** Header values undici will send (visible ASCII and Latin-1, no control characters). */
const headerText = () =>
  fc.oneof(
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
    fc.constantFrom('', 'x'.repeat(300), 'é'.repeat(10), '%00', 'null'),
  );

function credentials(kind: KeyKind, keys: KeyRing): fc.Arbitrary<Record<string, string>> {
  const key = kind === 'none' ? undefined : kind === 'malformed' ? undefined : keys[kind];
  if (kind === 'none') return fc.constant({});
  if (kind === 'malformed') {
    return fc.oneof(
      fc
        .constantFrom(
          'svc_test_',
          `svc_live_${'A'.repeat(32)}`,
          `svc_test_${'A'.repeat(500)}`,
          `${keys.test}x`,
          keys.test.slice(0, -1),
          keys.test.toUpperCase(),
        )
        .map((k) => ({ authorization: `Bearer ${k}` })),
      headerText().map((text) => ({ authorization: text })),
      fc.constant({ authorization: `Basic ${Buffer.from(`${keys.test}:`).toString('base64')}` }),
      fc.constant({ authorization: `Bearer ${keys.test}`, 'x-api-key': keys.otherMerchant }),
    );
  }
  return fc.constantFrom<Record<string, string>>({ authorization: `Bearer ${key}` }, { 'x-api-key': key! }, { authorization: `bearer ${key}` });
}

/** URLs carry UTF-8: a lone surrogate cannot be encoded, so it becomes U+FFFD as a browser would send it. */
const wellFormed = (text: string) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** A path parameter: a real id (either merchant's), an odd string, or a broken encoding. */
function pathValue(schema: Schema, ids: IdPool): fc.Arbitrary<string> {
  return fc.oneof(
    {
      weight: 5,
      arbitrary: fuzzValue(schema, ids).map((value) => encodeURIComponent(wellFormed(typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null')))),
    },
    { weight: 1, arbitrary: fc.constantFrom('%', '%zz', '%c0%af', '..', '.%2e', 'a%2fb', '%00', `${'x'.repeat(5_000)}`) },
    { weight: 1, arbitrary: oddString().map((text) => encodeURIComponent(wellFormed(text))) },
  );
}

function queryString(operation: Operation, ids: IdPool): fc.Arbitrary<string> {
  const query = operation.parameters.filter((p) => p.in === 'query');
  const pairs = fc.array(
    fc.oneof(
      ...(query.length > 0 ? [fc.constantFrom(...query).chain((p) => fuzzValue(p.schema, ids).map((value) => [p.name, value] as const))] : []),
      fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })),
    ),
    { maxLength: 4 },
  );
  return fc.oneof(
    {
      weight: 8,
      arbitrary: pairs.map((list) => {
        const search = new URLSearchParams();
        for (const [name, value] of list) search.append(name, wellFormed(typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null')));
        const text = search.toString();
        return text ? `?${text}` : '';
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom('?limit=%zz', '?limit=1&limit=2', `?startingAfter=${'a'.repeat(10_000)}`, '?&&&=', '?createdGte=%00') },
  );
}

/** Requests for one operation. */
export function requestFor(operation: Operation, keys: KeyRing, ids: IdPool): fc.Arbitrary<FuzzRequest> {
  const pathParams = operation.parameters.filter((p) => p.in === 'path');
  const apiPath = operation.template.startsWith('/api/v1/');
  return fc
    .record({
      interfaceB: fc.boolean(),
      kind: fc.constantFrom(...KEY_KINDS),
      pathValues: fc.tuple(...pathParams.map((p) => pathValue(p.schema, ids))),
      query: queryString(operation, ids),
      body: fc.option(fuzzBody(operation.body, ids), { freq: operation.body ? 12 : 2 }),
      contentType: fc.option(fc.constantFrom(...CONTENT_TYPES), { freq: 8 }),
      idempotencyKey: fc.option(headerText(), { freq: 3 }),
      methodSwap: fc.option(fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'GET', 'POST'), { freq: 30 }),
    })
    .chain((parts) =>
      credentials(parts.kind, keys).map((auth) => {
        let path = operation.template;
        for (const [index, p] of pathParams.entries()) path = path.replace(`{${p.name}}`, parts.pathValues[index]!);
        if (apiPath && parts.interfaceB) path = path.replace('/api/v1/', '/v1/');
        const headers: Record<string, string> = { ...auth };
        if (parts.body !== null) headers['content-type'] = parts.contentType ?? 'application/json';
        else if (parts.contentType !== null) headers['content-type'] = parts.contentType;
        if (parts.idempotencyKey !== null) headers['idempotency-key'] = parts.idempotencyKey;
        return {
          method: parts.methodSwap ?? operation.method,
          operation: `${operation.method} ${operation.template}`,
          path: `${path}${parts.query}`,
          headers,
          ...(parts.body !== null ? { body: parts.body } : {}),
        };
      }),
    );
}

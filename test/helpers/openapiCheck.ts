import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

interface Operation {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

/** What a client sent, for the request half of the check. */
export interface SentRequest {
  /** The JSON body sent; undefined: none. */
  body?: unknown;
}

/**
 * Checks real responses against the API's own OpenAPI document (JSON Schema 2020-12, as
 * OpenAPI 3.1 says): finds the operation by method and path template, then the response by
 * status, and validates the body. `/v1/...` is checked as `/api/v1/...` (the same operations).
 *
 * Requests too, as a validating proxy (Stoplight Prism) would hold them to the document: when the
 * server accepted one (2xx), a request without a body must be one the document allows without a
 * body (`requestBody.required` false), and a JSON body sent must match the request schema. A
 * request the server refused (4xx) may break the document on purpose; it is not checked.
 */
export interface OpenApiChecker {
  check(method: string, url: string, status: number, body: unknown, request?: SentRequest): void;
  /** Operations and statuses seen, to assert coverage. */
  seen: Set<string>;
  document: Record<string, unknown>;
}

export async function createOpenApiChecker(app: FastifyInstance): Promise<OpenApiChecker> {
  const response = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  const document = response.json() as { paths: Record<string, Record<string, Operation>> };
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const routes = Object.entries(document.paths).map(([template, operations]) => ({
    template,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    operations,
  }));
  const compiled = new Map<string, ValidateFunction>();
  const seen = new Set<string>();
  /** The request half: see {@link OpenApiChecker}. */
  function checkRequest(method: string, template: string, operation: Operation, request: SentRequest): void {
    const declared = operation.requestBody;
    if (request.body === undefined) {
      if (declared?.required) throw new Error(`${method} ${template} accepted a request without a body, but the OpenAPI document marks its body required`);
      return;
    }
    const schema = declared?.content?.['application/json']?.schema;
    if (!schema) return;
    const key = `${method} ${template} request`;
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(schema as object);
      compiled.set(key, validate);
    }
    if (!validate(request.body)) {
      throw new Error(
        `${method} ${template} accepted a body the OpenAPI document refuses: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(request.body)}`,
      );
    }
  }

  return {
    seen,
    document,
    check(method, url, status, body, request) {
      const path = url.split('?')[0]!.replace(/^\/v1\//, '/api/v1/');
      const route = routes.find((candidate) => candidate.pattern.test(path));
      if (!route) throw new Error(`OpenAPI document has no path for ${path}`);
      const operation = route.operations[method.toLowerCase()];
      if (!operation) throw new Error(`OpenAPI document has no ${method} ${route.template}`);
      const declared = operation.responses?.[String(status)];
      if (!declared) throw new Error(`OpenAPI document declares no ${status} for ${method} ${route.template}: ${JSON.stringify(body)}`);
      seen.add(`${method.toUpperCase()} ${route.template} ${status}`);
      if (request && status >= 200 && status < 300) checkRequest(method, route.template, operation, request);
      const schema = declared.content?.['application/json']?.schema;
      if (!schema) return;
      const key = `${method} ${route.template} ${status}`;
      let validate = compiled.get(key);
      if (!validate) {
        validate = ajv.compile(schema as object);
        compiled.set(key, validate);
      }
      if (!validate(body)) {
        throw new Error(`${method} ${url} ${status} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body)}`);
      }
    },
  };
}

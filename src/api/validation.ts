import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { badRequest, notFound, type NotFoundError } from '../internal/errors.ts';

// ajv-formats ships CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

function newAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({
    // Unknown fields are refused (400), never silently dropped.
    removeAdditional: false,
    // Bodies are JSON and keep their types ("10" is not 10); query strings and path parameters are text, so they are coerced.
    coerceTypes,
    useDefaults: false,
    allErrors: false,
    verbose: true,
    strict: false,
  });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-not-found', schemaType: 'string' });
  return ajv;
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** One ajv error as a sentence that says what is wrong and where ("body.amount must be a string"). */
export function describeSchemaError(error: ErrorObject, dataVar: string): string {
  const part = PART_NAMES[dataVar] ?? dataVar;
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const where = path ? `${part === 'body' ? '' : `${part} parameter `}${path}` : part;
  const custom = (error.parentSchema as { 'x-error'?: string } | undefined)?.['x-error'];
  if (error.propertyName !== undefined) {
    const rule =
      error.keyword === 'minLength' || error.keyword === 'maxLength'
        ? sizeRule(error.keyword, (error.params as { limit: number }).limit, false)
        : (error.message ?? 'is invalid');
    return `${where} key ${JSON.stringify(error.propertyName.slice(0, 60))} ${rule}`;
  }
  switch (error.keyword) {
    case 'required':
      return path
        ? `${where} is missing required field "${(error.params as { missingProperty: string }).missingProperty}"`
        : `missing required ${part === 'body' ? 'field' : `${part} parameter`} "${(error.params as { missingProperty: string }).missingProperty}"`;
    case 'additionalProperties':
      return `unknown ${part === 'body' ? 'field' : `${part} parameter`} "${path ? `${path}.` : ''}${(error.params as { additionalProperty: string }).additionalProperty}"`;
    case 'type': {
      const type = (error.params as { type: string }).type;
      if (!path && part === 'body') return 'the request body must be a JSON object';
      return `${where} must be ${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
    }
    case 'enum':
      return `${where} must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    case 'pattern':
    case 'format':
      return `${where} ${custom ?? (error.keyword === 'format' ? `must be a valid ${(error.params as { format: string }).format}` : 'has an invalid format')}`;
    case 'propertyNames':
      return `${where} has a key that is empty or too long`;
    // Sizes and bounds in plain words (ajv's own read "must NOT have fewer than 1 characters").
    case 'minLength':
    case 'maxLength':
    case 'minItems':
    case 'maxItems':
    case 'minProperties':
    case 'maxProperties':
      return `${where || part} ${custom ?? sizeRule(error.keyword, (error.params as { limit: number }).limit, !path && part === 'body')}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum': {
      const { limit } = error.params as { limit: number };
      const bound = { minimum: 'at least', maximum: 'at most', exclusiveMinimum: 'more than', exclusiveMaximum: 'less than' }[error.keyword];
      return `${where} must be ${bound} ${limit}`;
    }
    default:
      return `${where || part} ${(part === 'header' ? custom : undefined) ?? error.message ?? 'is invalid'}`;
  }
}

/**
 * A path parameter that fails its schema. Path parameters are ids, and an id of the wrong shape
 * names nothing, exactly like a well-shaped unknown one: 404 (spec §7 lists 404 for an unknown
 * resource), named with the schema's `x-not-found` ("payment session \"abc-1\" not found").
 */
export function unknownIdError(error: ErrorObject): NotFoundError {
  const noun = (error.parentSchema as { 'x-not-found'?: string } | undefined)?.['x-not-found'] ?? 'resource';
  const id = typeof error.data === 'string' ? error.data : '';
  return notFound(`${noun} ${JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id)} not found`);
}

const bodyValidators = new WeakMap<object, ReturnType<Ajv['compile']>>();
let bodyAjv: Ajv | undefined;

/**
 * Checks `data` against a route's body schema exactly as the API does (same ajv options, same
 * message), for callers that take the same input another way (the dashboard's forms).
 * @throws {InvalidRequestError} 400 with the API's message for the first problem.
 */
export function checkBody<T>(schema: object, data: unknown): T {
  bodyAjv ??= newAjv(false);
  let validate = bodyValidators.get(schema);
  if (!validate) {
    validate = bodyAjv.compile(schema);
    bodyValidators.set(schema, validate);
  }
  if (!validate(data)) throw badRequest(describeSchemaError(validate.errors![0]!, 'body'));
  return data as T;
}

/** "must not be empty" / "must be at most 40 characters" / "must have at most 50 fields". */
function sizeRule(keyword: string, limit: number, wholeBody: boolean): string {
  const unit = keyword.endsWith('Length') ? 'character' : keyword.endsWith('Items') ? 'item' : wholeBody ? 'field' : 'key';
  const plural = limit === 1 ? unit : `${unit}s`;
  if (keyword.startsWith('min'))
    return limit === 1 ? (wholeBody ? 'must not be empty: send at least one field' : 'must not be empty') : `must have at least ${limit} ${plural}`;
  return keyword.endsWith('Length') ? `must be at most ${limit} ${plural}` : `must have at most ${limit} ${plural}`;
}

/**
 * Installs request validation: ajv with formats, no coercion for bodies, coercion for query and
 * path; unknown fields refused; the first problem becomes a 400 `{"error"}` that names the field,
 * except in the path, where an id that fails its schema is a 404 (see {@link unknownIdError}).
 * Bodies must be JSON: any other content type is a 400 (fastify would answer 415).
 */
export function registerValidation(app: FastifyInstance): void {
  const strict = newAjv(false);
  const coercing = newAjv(true);
  // Each route's validator is compiled on its first request, not at start-up: compiling every
  // route's schemas up front was a large part of the API role's start-up CPU (issue 28).
  app.setValidatorCompiler(({ schema, httpPart }) => {
    let validate: ReturnType<Ajv['compile']> | undefined;
    return (data: unknown) => {
      validate ??= (httpPart === 'body' ? strict : coercing).compile(schema);
      return validate(data) ? { value: data } : { error: validate.errors as unknown as Error };
    };
  });
  app.setSchemaErrorFormatter((errors, dataVar) =>
    dataVar === 'params' ? unknownIdError(errors[0] as unknown as ErrorObject) : badRequest(describeSchemaError(errors[0] as unknown as ErrorObject, dataVar)),
  );
  app.addContentTypeParser('*', (request, _payload, done) => {
    done(
      badRequest(`Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')} is not accepted: send a JSON body with Content-Type: application/json`),
      undefined,
    );
  });
  app.removeContentTypeParser('text/plain');
  app.addHook('preValidation', async (request) => {
    for (const [part, value] of [
      ['body', request.body],
      ['query', request.query],
      ['path', request.params],
    ] as const) {
      const found = findNul(value, part);
      // No id contains NUL: in the path it names nothing (404, as any id of the wrong shape).
      if (found && part === 'path') throw notFound(`no resource has an id with a NUL character (U+0000) in it`);
      if (found) throw badRequest(`${found} contains a NUL character (U+0000), which is not accepted`);
    }
  });
}

/** Postgres text cannot hold U+0000: such input is refused up front, naming where it was. */
function findNul(value: unknown, path: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? path : undefined;
  if (!value || typeof value !== 'object' || depth > 32) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (key.includes('\u0000')) return `${path} key`;
    const found = findNul(inner, `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

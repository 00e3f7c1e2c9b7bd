/**
 * Value generators of the fuzzing run (bench/chaos/fuzz.ts): a value a JSON Schema of the OpenAPI
 * document accepts, and the hostile ones around it (wrong types, huge and malformed values, odd
 * Unicode), all fast-check arbitraries so a run is reproducible from its seed.
 */
import fc from 'fast-check';

type Schema = Record<string, any>;

/** Strings that have broken parsers, validators, databases and logs somewhere. */
const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\u202eevil',
  '\ufeff{}',
  'ｓｖｃ＿ｔｅｓｔ',
  '١٢٫٥',
  '１２.５',
  '12.50\u200b',
  '0x',
  `0x${'f'.repeat(40)}`,
  `0x${'G'.repeat(40)}`,
  '../../../../etc/passwd',
  '%00',
  '%zz',
  "' OR 1=1 --",
  '"); DROP TABLE payment_sessions; --',
  '<script>alert(1)</script>',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup string, sent as-is on purpose
  '${jndi:ldap://x}',
  '{{7*7}}',
  '👨‍👩‍👧‍👦🏳️‍🌈',
  'Z̸̢͚̪̩̼̀͆͊a̵l̶g̷o̸',
  '1e309',
  '-1',
  '-0',
  '0.0000000000000000000000001',
  '9'.repeat(100),
  'NaN',
  'Infinity',
  'null',
  'true',
  '[]',
  '{}',
  '2026-02-30T25:61:61Z',
  '0001-01-01T00:00:00Z',
  '275760-09-13T00:00:00.001Z',
  'ses_',
  `ses_${'A'.repeat(200)}`,
  'http://169.254.169.254/latest/meta-data',
  'javascript:alert(1)',
  'http://user:pass@example.com',
  'https://[::1]/',
  'svc_test_',
];

/** Numbers at the edges of JSON, JavaScript and Postgres. */
const NASTY_NUMBERS = [0, -0, -1, 1.5, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, 5e-324, Number.MAX_SAFE_INTEGER, 10001, 1_000_000_001];

/** An odd string: listed nasties, arbitrary code points (lone surrogates included), or long runs. */
export function oddString(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
    { weight: 1, arbitrary: fc.constantFrom(1_000, 10_000, 100_000).map((n) => 'x'.repeat(n)) },
    { weight: 1, arbitrary: fc.constantFrom(2_049, 70_000).map((n) => '\u00e9'.repeat(n)) },
  );
}

/** Any JSON value of the wrong kind, shallow. */
export function wrongValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom(...NASTY_NUMBERS),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    oddString(),
    fc.array(fc.oneof(fc.integer(), fc.string(), fc.constant(null)), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.integer(), fc.string()), { maxKeys: 4 }),
    fc.integer({ min: 50, max: 3_000 }).map((depth) => JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`)),
  );
}

/** Arrays of every schema's example ids, so fields that name objects sometimes name real ones. */
export interface IdPool {
  /** Ids by their prefix (`ses`, `plink`, `we`, `evt`, …), both merchants' mixed. */
  byPrefix: Map<string, string[]>;
  all: string[];
}

/** A value `schema` accepts (most of the time: patterns and formats are approximated). */
export function validValue(schema: Schema | undefined, ids: IdPool, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.constant(null);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  const choices = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(choices)) return fc.oneof(...choices.map((choice: Schema) => validValue(choice, ids, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const properties = Object.entries<Schema>(schema.properties ?? {});
      const required = new Set<string>(schema.required ?? []);
      const record: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of properties) record[name] = validValue(property, ids, depth + 1);
      if (properties.length === 0) return fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 3 });
      return fc.record(record, { requiredKeys: properties.map(([name]) => name).filter((name) => required.has(name)) });
    }
    case 'array':
      return fc.array(validValue(schema.items, ids, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 1_000, 1_000_000) });
    case 'number':
      return fc.double({ min: schema.minimum ?? 0, max: schema.maximum ?? 1_000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return validString(schema, ids);
  }
}

function validString(schema: Schema, ids: IdPool): fc.Arbitrary<string> {
  const pattern: string | undefined = schema.pattern;
  const idPrefix = pattern ? /^\^([a-z]+)_/.exec(pattern)?.[1] : undefined;
  const known = idPrefix ? ids.byPrefix.get(idPrefix) : undefined;
  if (known && known.length > 0) return fc.constantFrom(...known);
  if (schema.format === 'date-time')
    return fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === 'uri' || pattern?.includes('[hH][tT]'))
    return fc.constantFrom('https://example.com/hook', 'https://shop.example/done', 'http://127.0.0.1:9/x');
  if (pattern?.includes('[0-9]+)?$')) return fc.constantFrom('1', '12.5', '0.01', '1000000', '25.00', '0.000001');
  if (pattern) {
    try {
      return fc.stringMatching(new RegExp(pattern)).filter((s) => s.length <= (schema.maxLength ?? 200));
    } catch {}
  }
  return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) });
}

/** A value near `schema`'s: a valid one, or one of the wrong kind, odd, huge, or an id of anything. */
export function fuzzValue(schema: Schema | undefined, ids: IdPool): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 5, arbitrary: validValue(schema, ids) },
    { weight: 2, arbitrary: wrongValue() },
    { weight: 2, arbitrary: oddString() },
    { weight: 1, arbitrary: ids.all.length > 0 ? fc.constantFrom(...ids.all) : fc.constant('ses_none') },
  );
}

/**
 * A request body for `schema`: valid, valid with fields dropped, replaced or added, or no object
 * at all. Returned as JSON text, or as raw text and bytes that are not JSON.
 */
export function fuzzBody(schema: Schema | undefined, ids: IdPool): fc.Arbitrary<string | Buffer> {
  const properties = Object.entries<Schema>(schema?.properties ?? {});
  const mutated = fc
    .tuple(
      validValue(schema, ids),
      fc.array(
        fc.tuple(
          fc.constantFrom(...(properties.length > 0 ? properties.map(([name]) => name) : ['x'])),
          fc.oneof(fuzzValue(undefined, ids), wrongValue(), oddString(), fc.constant(undefined)),
        ),
        { maxLength: 3 },
      ),
      fc.option(fc.tuple(fc.string({ maxLength: 12 }), wrongValue())),
    )
    .map(([base, changes, extra]) => {
      const value = base && typeof base === 'object' && !Array.isArray(base) ? { ...(base as object) } : {};
      for (const [name, replacement] of changes) (value as Record<string, unknown>)[name] = replacement;
      if (extra) (value as Record<string, unknown>)[extra[0]] = extra[1];
      return JSON.stringify(value);
    });
  const raw = fc.constantFrom<string | Buffer>(
    '',
    '{',
    '{"amount":',
    'nul',
    '{"a":1}{"b":2}',
    '{"amount":"1","amount":"2","currency":"USDC","chain":"polygon"}',
    '\ufeff{}',
    `{"metadata":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}}`,
    `[${'1,'.repeat(100_000)}1]`,
    Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]),
    Buffer.from('{"amount":"\xc3\x28"}', 'latin1'),
    `{"x":"${'y'.repeat(1_100_000)}"}`,
  );
  return fc.oneof(
    { weight: 3, arbitrary: validValue(schema, ids).map((value) => JSON.stringify(value) ?? 'null') },
    { weight: 5, arbitrary: mutated },
    { weight: 1, arbitrary: wrongValue().map((value) => JSON.stringify(value) ?? 'null') },
    { weight: 1, arbitrary: raw },
  );
}

import type { Sandbox } from '../../src/sandbox/index.ts';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { privateKeyToAccount } from 'viem/accounts';
import { createHttp } from '../../src/http.ts';
import type { RateLimits } from '../../src/api/rateLimits.ts';
import { createApiKey, createMerchant, type Scope } from '../../src/accounts/index.ts';
import { CHAIN_NAMES, loadConfig } from '../../src/internal/config.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { createMetricsRegistry } from '../../src/internal/metrics.ts';
import { createSecretBox } from '../../src/internal/crypto.ts';
import type { Store } from '../../src/store/index.ts';
import type { TestDatabase } from './db.ts';
import type { TransactionLookups } from '../../src/ingest/lookup.ts';
import { createOpenApiChecker, type OpenApiChecker } from './openapiCheck.ts';

/** The public URL the test APIs build links with. */
export const PUBLIC_URL = 'https://pay.example.test';

/** Limits high enough that only the rate-limit tests meet them. */
export const GENEROUS_LIMITS: RateLimits = { create: 100_000, read: 100_000, write: 100_000, ip: 1_000_000, publicCreate: 100_000, dashboardIp: 1_000_000 };

export const box = createSecretBox(randomBytes(32));

/**
 * An RPC URL for every chain, so live sessions are accepted on all six (the API never talks to a
 * chain: any URL does). Override one with '' to make that chain sandbox-only.
 */
export const EVERY_CHAIN_LIVE: Record<string, string> = Object.fromEntries(
  CHAIN_NAMES.map((chain) => [`SVC_${chain.toUpperCase()}_RPC_URL`, `http://rpc.invalid/${chain}`]),
);

/** A real API (fastify) on `store`, as the daemon builds it, with every chain live unless `env` says otherwise. */
export function buildApi(
  store: Store,
  options: { rateLimits?: Partial<RateLimits>; env?: Record<string, string>; lookups?: TransactionLookups; sandbox?: Sandbox; priceCacheMs?: number } = {},
): FastifyInstance {
  const config = loadConfig({ SVC_PUBLIC_URL: PUBLIC_URL, LOG_LEVEL: 'silent', ...EVERY_CHAIN_LIVE, ...options.env });
  return createHttp({
    store,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetricsRegistry({ defaultMetrics: false }),
    config,
    box,
    rateLimits: options.rateLimits ?? GENEROUS_LIMITS,
    ...(options.lookups ? { lookups: options.lookups } : {}),
    ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    ...(options.priceCacheMs !== undefined ? { priceCacheMs: options.priceCacheMs } : {}),
  });
}

/** A merchant with keys: full live and test keys, read-only test key, and one `svc_sk_` test key. */
export async function newMerchant(store: Store, name = 'Shop') {
  const { merchant } = await createMerchant(store, box, { name });
  const key = async (livemode: boolean, scopes?: Scope[], style?: 'plain' | 'sk') =>
    (await createApiKey(store, { merchantId: merchant.id, livemode, ...(scopes ? { scopes } : {}), ...(style ? { style } : {}) })).secret;
  return {
    id: merchant.id,
    test: await key(false),
    live: await key(true),
    readOnly: await key(false, ['read']),
    sk: await key(false, undefined, 'sk'),
    key,
  };
}

/** A fixed EVM account for signatures and addresses. */
export const payer = privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d');
export const WALLET = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
export const SOLANA_WALLET = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
export const xApiKey = (key: string) => ({ 'x-api-key': key });

/** A response as the tests read it. */
export interface Answer {
  status: number;
  body: any;
  headers: Record<string, string | string[] | number | undefined>;
}

/**
 * Drives `app` in process (inject) and checks every answer against the OpenAPI document when a
 * checker is given. `key` goes out as Bearer unless `as: 'x-api-key'`.
 */
export function createClient(app: FastifyInstance, checker?: Pick<OpenApiChecker, 'check'>) {
  return async function call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    options: { key?: string; as?: 'bearer' | 'x-api-key'; body?: unknown; headers?: Record<string, string>; remoteAddress?: string } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) Object.assign(headers, options.as === 'x-api-key' ? xApiKey(options.key) : bearer(options.key));
    const response = await app.inject({
      method,
      url,
      headers,
      ...(options.body !== undefined ? { payload: options.body as object } : {}),
      ...(options.remoteAddress ? { remoteAddress: options.remoteAddress } : {}),
    });
    const isJson = String(response.headers['content-type'] ?? '').includes('application/json');
    const body = isJson && response.body ? response.json() : response.body;
    checker?.check(method, url, response.statusCode, body, { body: options.body });
    return { status: response.statusCode, body, headers: response.headers };
  };
}

/** The same client over a real socket (fetch to a listening server), checked against the OpenAPI document too. */
export function createSocketClient(baseUrl: string, checker?: Pick<OpenApiChecker, 'check'>) {
  return async function call(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    options: { key?: string; as?: 'bearer' | 'x-api-key'; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.key) Object.assign(headers, options.as === 'x-api-key' ? xApiKey(options.key) : bearer(options.key));
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${baseUrl}${url}`, {
      method,
      headers,
      redirect: 'manual',
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    const body = (response.headers.get('content-type') ?? '').includes('application/json') && text ? JSON.parse(text) : text;
    checker?.check(method, url, response.status, body, { body: options.body });
    return { status: response.status, body, headers: Object.fromEntries(response.headers.entries()) };
  };
}

/**
 * The API of a test file: built on its database before its tests, closed after. `call` checks
 * every answer against the OpenAPI document unless `checked` is false (tests that send what the
 * document forbids on purpose).
 */
export function useApi(
  db: TestDatabase,
  options: { rateLimits?: Partial<RateLimits>; env?: Record<string, string>; checked?: boolean; lookups?: TransactionLookups; priceCacheMs?: number } = {},
) {
  let app: FastifyInstance | undefined;
  let client: ReturnType<typeof createClient> | undefined;
  beforeAll(async () => {
    app = buildApi(db.store, options);
    await app.ready();
    client = createClient(app, options.checked === false ? undefined : await createOpenApiChecker(app));
  });
  afterAll(() => app?.close());
  return {
    get app(): FastifyInstance {
      return app!;
    },
    call: ((...args) => client!(...args)) as ReturnType<typeof createClient>,
  };
}

/**
 * A caller of a gateway listening on `baseUrl` over real HTTP (what x402 clients reach), with
 * the Bearer `key` of `keyOf()` (read at each call: tests set their merchant in beforeAll).
 */
export function httpApi(baseUrlOf: () => string, keyOf: () => string) {
  return async (method: 'GET' | 'POST', url: string, payload?: unknown): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${baseUrlOf()}${url}`, {
      method,
      headers: { authorization: `Bearer ${keyOf()}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
    });
    return { status: response.status, body: await response.json() };
  };
}

/** How many payment sessions the merchant has (both modes): what a refused creation must leave unchanged. */
export async function countSessions(store: Store, merchantId: string): Promise<number> {
  const { rows } = await store.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_sessions WHERE merchant_id = $1', [merchantId]);
  return rows[0]!.n;
}

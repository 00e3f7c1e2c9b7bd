import type { FastifyInstance, FastifyRequest } from 'fastify';
import pg from 'pg';
import type { Store } from '../store/index.ts';
import {
  API_KEY_CHANGES_CHANNEL,
  findApiKey,
  hasScope,
  LAST_USE_INTERVAL_MS,
  MAX_KEY_LENGTH,
  onApiKeyChange,
  recordApiKeyUse,
  type AuthResult,
  type Scope,
} from '../accounts/index.ts';
import { sha256Hex } from '../internal/crypto.ts';
import { forbidden, unauthorized } from '../internal/errors.ts';

/** Who is calling: set on every authenticated request. */
export interface RequestAuth {
  merchantId: string;
  /** false: sandbox data only; true: production data only. Every query filters on it. */
  livemode: boolean;
  keyId: string;
  /** The key's hint (`svc_live_…abcd`: prefix and last four characters), for the audit log. */
  keyHint: string;
  scopes: Scope[];
}

/**
 * What a route needs: `none` (health, public checkout JSON) or a scope. Routes that do not say
 * need `read` for GET/HEAD and `write` for everything else.
 */
export type RouteAuth = 'none' | Scope;

declare module 'fastify' {
  interface FastifyRequest {
    auth: RequestAuth | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}

/**
 * The key comes as `Authorization: Bearer <key>` (Interface A) or `X-API-Key: <key>`
 * (Interface B); both are accepted on every route. When both are sent they must agree.
 */
function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const bearer = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
  const apiKeyHeader = request.headers['x-api-key'];
  const xApiKey = typeof apiKeyHeader === 'string' ? apiKeyHeader.trim() : undefined;
  if (bearer && xApiKey && bearer !== xApiKey) throw unauthorized('the Authorization and X-API-Key headers carry different keys');
  return bearer ?? (xApiKey || undefined);
}

/**
 * Longest time a process trusts a key it read without reading it again: the worst-case delay
 * between a revocation's commit and the last request a process accepts with that key. A
 * revocation normally reaches every process within milliseconds (the database notifies them,
 * migrations/016); this bound holds even when a notification is lost (a listener reconnecting).
 */
export const KEY_CACHE_TTL_MS = 1_000;

/** A key read longer ago than this is read again in the background while still served, so steady traffic never waits for it. */
const KEY_CACHE_REFRESH_MS = 500;

/** Keys kept per process; far above any merchant count a gateway serves, small in memory (~1 KB each). */
const KEY_CACHE_MAX_ENTRIES = 10_000;

/** Retry delays of the listener's connection (doubling, capped): a lost listener only costs the TTL's delay. */
const LISTEN_RETRY_MS = { first: 1_000, max: 30_000 } as const;

/** Authenticates presented keys from memory when it can (see {@link createApiKeyCache}). */
export interface ApiKeyCache {
  authenticate(presented: string): Promise<AuthResult>;
  /** Stops listening for changes (the app is closing). */
  close(): Promise<void>;
}

interface Entry {
  /** `ok` or `revoked`; unknown and malformed keys are never cached, so a new key works at once everywhere. */
  result: AuthResult;
  /** When the read that produced it was sent (a later revocation may be missing from it). */
  readAt: number;
  refreshing: boolean;
}

/**
 * A per-process cache of the API keys presented to the HTTP layer, keyed by the key's SHA-256.
 * A cached key is trusted for {@link KEY_CACHE_TTL_MS} from the moment its read was sent; any
 * change to api_keys that can refuse a key empties the cache at once in this process
 * (`revokeApiKey`) and in every other one (a `LISTEN` on {@link API_KEY_CHANGES_CHANNEL}, from
 * migration 016's trigger). Unknown keys are not cached. `last_used_at` is written at most once a
 * minute per key and process (and at most once a minute per key in all, by the UPDATE's own test).
 */
export function createApiKeyCache(params: { store: Store; ttlMs?: number }): ApiKeyCache {
  const ttlMs = params.ttlMs ?? KEY_CACHE_TTL_MS;
  const refreshMs = Math.min(KEY_CACHE_REFRESH_MS, ttlMs / 2);
  const entries = new Map<string, Entry>();
  const lastUseWritten = new Map<string, number>();
  // A read that started before an invalidation must not put its (maybe stale) answer back.
  let generation = 0;
  // Reads in flight by key hash: requests that find no fresh entry wait for the read already sent
  // instead of each sending its own (under load a refresh slower than its half-TTL head start made
  // a third of creations read their key in line: docs/benchmarks.md, issue 28).
  const inFlight = new Map<string, { answer: Promise<AuthResult>; sentAt: number; generation: number }>();
  const invalidate = () => {
    generation++;
    entries.clear();
    inFlight.clear();
  };
  const stopLocal = onApiKeyChange(invalidate);

  let listener: pg.Client | undefined;
  let listening = false;
  let closed = false;
  let retryMs: number = LISTEN_RETRY_MS.first;
  let retryTimer: NodeJS.Timeout | undefined;
  function listen(): void {
    if (closed || listening) return;
    listening = true;
    const client = new pg.Client(params.store.pool.options);
    listener = client;
    const retry = () => {
      if (listener !== client) return;
      listener = undefined;
      invalidate();
      client.end().catch(() => {});
      if (closed) return;
      retryTimer = setTimeout(() => {
        listening = false;
        listen();
      }, retryMs).unref();
      retryMs = Math.min(LISTEN_RETRY_MS.max, retryMs * 2);
    };
    client.on('notification', invalidate);
    client.on('error', retry);
    client.on('end', retry);
    client
      .connect()
      .then(() => client.query(`LISTEN ${API_KEY_CHANGES_CHANNEL}`))
      .then(() => {
        // Changes made while no one listened are not announced again: forget what was read before.
        invalidate();
        retryMs = LISTEN_RETRY_MS.first;
      }, retry);
  }

  async function read(presented: string, hash: string): Promise<AuthResult> {
    const readAt = performance.now();
    const readGeneration = generation;
    const result = await findApiKey(params.store, presented);
    if (result.ok || result.reason === 'revoked') {
      if (generation === readGeneration) {
        if (entries.size >= KEY_CACHE_MAX_ENTRIES) entries.delete(entries.keys().next().value!);
        entries.set(hash, { result, readAt, refreshing: false });
      }
    }
    return result;
  }

  /**
   * {@link read}, shared with the requests that need the same key while it is in flight. Only a
   * read of the current generation sent less than a TTL ago is joined: its answer is then as fresh
   * as a cached entry would be, and one sent before a change never answers a request after it.
   */
  function readShared(presented: string, hash: string, now: number): Promise<AuthResult> {
    const pending = inFlight.get(hash);
    if (pending && pending.generation === generation && now - pending.sentAt < ttlMs) return pending.answer;
    const answer = read(presented, hash).finally(() => {
      if (inFlight.get(hash)?.answer === answer) inFlight.delete(hash);
    });
    inFlight.set(hash, { answer, sentAt: now, generation });
    return answer;
  }

  async function recordUse(result: AuthResult): Promise<void> {
    if (!result.ok) return;
    const { id, lastUsedAt } = result.apiKey;
    const now = Date.now();
    const written = lastUseWritten.get(id) ?? lastUsedAt?.getTime() ?? 0;
    if (now - written <= LAST_USE_INTERVAL_MS) {
      if (!lastUseWritten.has(id)) lastUseWritten.set(id, written);
      return;
    }
    if (lastUseWritten.size >= KEY_CACHE_MAX_ENTRIES) lastUseWritten.clear();
    lastUseWritten.set(id, now);
    await recordApiKeyUse(params.store, id);
  }

  return {
    async authenticate(presented) {
      // Text that is not a key of ours is refused without hashing it (findApiKey says why).
      if (presented.length > MAX_KEY_LENGTH) return findApiKey(params.store, presented);
      listen();
      const hash = sha256Hex(presented);
      const entry = entries.get(hash);
      const now = performance.now();
      let result: AuthResult;
      if (entry && now - entry.readAt < ttlMs) {
        result = entry.result;
        if (now - entry.readAt >= refreshMs && !entry.refreshing) {
          entry.refreshing = true;
          // A failed refresh leaves the entry to expire; the request after that reads in line.
          readShared(presented, hash, now).catch(() => {});
        }
      } else {
        result = await readShared(presented, hash, now);
      }
      await recordUse(result);
      return result;
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      stopLocal();
      const client = listener;
      listener = undefined;
      invalidate();
      // A frozen database never answers the goodbye: do not let it hold up shutdown.
      if (client) await Promise.race([client.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 200).unref())]);
    },
  };
}

/**
 * Adds `request.auth` and enforces each route's `config.auth`. It runs on `onRequest`, before the
 * body is read or validated, so a caller without a valid key learns nothing about its request
 * but a 401 (Stripe's order: authentication, then validation). Unknown routes stay 404s. Keys are
 * read through a per-process {@link createApiKeyCache}, closed with the app.
 */
export function registerAuth(app: FastifyInstance, params: { store: Store }): void {
  const keys = createApiKeyCache({ store: params.store });
  app.addHook('onClose', () => keys.close());
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const needed: RouteAuth = request.routeOptions.config?.auth ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
    if (needed === 'none') return;
    const key = presentedKey(request);
    if (!key) throw unauthorized('missing API key: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>"');
    const result = await keys.authenticate(key);
    if (!result.ok) throw unauthorized(result.reason === 'revoked' ? 'this API key has been revoked' : 'invalid API key');
    const { apiKey } = result;
    if (!hasScope(apiKey, needed)) throw forbidden(`this API key lacks the "${needed}" scope needed for ${request.method} requests`);
    request.auth = { merchantId: apiKey.merchantId, livemode: apiKey.livemode, keyId: apiKey.id, keyHint: apiKey.hint, scopes: apiKey.scopes };
  });
}

/** The caller of an authenticated route (the preHandler guarantees it is set). */
export function authOf(request: FastifyRequest): RequestAuth {
  if (!request.auth) throw unauthorized('missing API key');
  return request.auth;
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Store } from '../store/index.ts';
import { authenticateApiKey, hasScope, type Scope } from '../accounts/index.ts';
import { forbidden, unauthorized } from '../internal/errors.ts';

/** Who is calling: set on every authenticated request. */
export interface RequestAuth {
  merchantId: string;
  /** false: sandbox data only; true: production data only. Every query filters on it. */
  livemode: boolean;
  keyId: string;
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
 * Adds `request.auth` and enforces each route's `config.auth`. It runs on `onRequest`, before the
 * body is read or validated, so a caller without a valid key learns nothing about its request
 * but a 401 (Stripe's order: authentication, then validation). Unknown routes stay 404s.
 */
export function registerAuth(app: FastifyInstance, params: { store: Store }): void {
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const needed: RouteAuth = request.routeOptions.config?.auth ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
    if (needed === 'none') return;
    const key = presentedKey(request);
    if (!key) throw unauthorized('missing API key: send it as "Authorization: Bearer <key>" or "X-API-Key: <key>"');
    const result = await authenticateApiKey(params.store, key);
    if (!result.ok) throw unauthorized(result.reason === 'revoked' ? 'this API key has been revoked' : 'invalid API key');
    const { apiKey } = result;
    if (!hasScope(apiKey, needed)) throw forbidden(`this API key lacks the "${needed}" scope needed for ${request.method} requests`);
    request.auth = { merchantId: apiKey.merchantId, livemode: apiKey.livemode, keyId: apiKey.id, scopes: apiKey.scopes };
  });
}

/** The caller of an authenticated route (the preHandler guarantees it is set). */
export function authOf(request: FastifyRequest): RequestAuth {
  if (!request.auth) throw unauthorized('missing API key');
  return request.auth;
}

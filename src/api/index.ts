import { randomBytes } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import { badRequest, notFound } from '../internal/errors.ts';
import { nodeServerTimeouts } from '../internal/httpTimeouts.ts';
import { answerClientError } from '../internal/httpClientErrors.ts';
import { registerAuth } from './auth.ts';
import type { ApiDeps } from './deps.ts';
import { buildLazySerializer } from './lazySerializers.ts';
import { registerValidation } from './validation.ts';
import { findIllFormedText, illFormedTextMessage } from './wellFormed.ts';
import { registerOpenApi, openApiRoutes } from './openapi.ts';
import { DEFAULT_RATE_LIMITS, registerIpRateLimit, registerKeyRateLimit } from './rateLimits.ts';
import { registerIdempotency } from './idempotency.ts';
import { errorAnswer, frameworkErrorAnswer } from './httpErrors.ts';
import { healthRoutes } from './routes/health.ts';
import { sandboxRoutes } from './routes/sandbox.ts';
import { feeRoutes } from './routes/fees.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { paymentRoutes } from './routes/payments.ts';
import { checkoutSessionRoutes } from './routes/checkoutSessions.ts';
import { paymentLinkRoutes, publicPaymentLinkRoutes } from './routes/paymentLinks.ts';
import { currencyRoutes } from './routes/currencies.ts';
import { statusRoutes } from './routes/status.ts';
import { refundRoutes } from './routes/refunds.ts';
import { walletRoutes } from './routes/wallets.ts';
import { brandRoutes } from './routes/brand.ts';
import { transferRoutes } from './routes/transfers.ts';
import { webhookRoutes } from './routes/webhooks.ts';
import { eventRoutes } from './routes/events.ts';
import { x402FacilitatorRoutes, x402ResourceRoutes } from './routes/x402.ts';
import { discoveryRoutes, facilitatorDiscoveryRoutes } from './routes/discovery.ts';
import { createTransactionLookups } from '../ingest/lookup.ts';
import { createFeedCache } from '../pricing/index.ts';

export type { ApiDeps };

/**
 * A surface served beside the API on the same server (the hosted checkout, the dashboard): it
 * registers its routes at the root with the API's dependencies. The API does not import them;
 * the daemon wires them in (src/http.ts), so the layers only ever import downward.
 */
export type Surface = (app: FastifyInstance, deps: ApiDeps) => void;

/** What {@link createApi} takes: the API's dependencies, with defaults for the ones it can make. */
export type CreateApiParams = Omit<ApiDeps, 'startedAt' | 'lookups' | 'pricing'> & {
  startedAt?: Date;
  lookups?: ApiDeps['lookups'];
  /** How long a Chainlink feed reading is reused (default FEED_CACHE_MS, 5 s; tests that move a feed pass 0). */
  priceCacheMs?: number;
  /** Registered after the API's routes, in order; see src/http.ts for the daemon's. */
  surfaces?: readonly Surface[];
};

/**
 * Many HTTP clients and SDKs send `Content-Type: application/json` on every request, body or not.
 * An empty (or whitespace-only) JSON body is therefore taken as no body: body-less actions
 * (DELETE, rotate-secret, redeliver, reject) accept it, and routes that need a body answer that
 * it must be a JSON object. A non-empty body that is not JSON is still a 400. Parsing otherwise
 * stays fastify's own, with its `__proto__` and `constructor` poisoning checks. Every route's JSON
 * (the checkout's and the sandbox's included) comes through here, so text that is not well-formed
 * Unicode (a lone surrogate escape) is refused here once, as a 400 naming where it is.
 */
function registerEmptyJsonBody(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if ((body as string).trim() === '') return done(null, undefined);
    parseJson(request, body as string, (error, value) => {
      // fastify's poisoning check refuses valid JSON with the same "not valid JSON" error: when
      // the text does parse, say which keys are refused instead.
      if (error && isJson(body as string)) return done(badRequest('the request body may not use the keys "__proto__" or "constructor.prototype"'), undefined);
      const illFormed = error ? undefined : findIllFormedText(value);
      if (illFormed) return done(badRequest(illFormedTextMessage(illFormed)), undefined);
      done(error, value);
    });
  });
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Route modules, each registering its routes relative to the API prefix. */
const ROUTE_MODULES: ((app: FastifyInstance, deps: ApiDeps) => void)[] = [
  healthRoutes,
  openApiRoutes,
  sessionRoutes,
  paymentRoutes,
  checkoutSessionRoutes,
  paymentLinkRoutes,
  currencyRoutes,
  statusRoutes,
  refundRoutes,
  walletRoutes,
  brandRoutes,
  transferRoutes,
  webhookRoutes,
  eventRoutes,
  sandboxRoutes,
  feeRoutes,
  x402FacilitatorRoutes,
  facilitatorDiscoveryRoutes,
];

/** The spec's base path is `/api/v1`; one listing writes `/v1`. Both serve the same routes. */
export const API_PREFIXES = ['/api/v1', '/v1'] as const;

/**
 * Longest wait of a request for a database connection. A healthy pool hands one out in
 * microseconds and opens a new one in milliseconds; 3 s only runs out when the database does
 * not answer or the pool is saturated, and the client is better served by a quick 503.
 */
export const API_DB_CONNECT_MS = 3_000;

/**
 * The per-IP rate limit is every request's first database statement, a one-row upsert, and it
 * fails open on routes without a key (health, checkout): a short bound keeps a frozen database
 * from adding a long wait in front of /health's own check, so /health answers within ~2 s.
 */
export const IP_LIMIT_DB_LIMITS = { connectMs: 1_000, queryMs: 1_000 } as const;

/** Largest accepted body. 64 KiB is far above any valid request (metadata is capped well below it). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * The HTTP layer: Interface A and Interface B under `/api/v1` (and `/v1`), plus `/metrics`,
 * `/docs` and the public payment-link URLs `/pay/<id>`. It reads and writes payment state in
 * Postgres and never talks to a chain. A fastify instance, so tests drive it in process with
 * `inject` or over a real socket with `listen`.
 *
 * Order of checks on every request: per-IP rate limit, authentication (401/403), per-key rate
 * limit, body parsing and schema validation (400), idempotency (409/422/replay), the handler.
 */
export function createApi(params: CreateApiParams): FastifyInstance {
  // Every database wait of a request is bounded, so a frozen database gives 503s, not hung
  // requests; the workers sharing this pool keep their unbounded store (see Store.bounded).
  const store = params.store.bounded({ connectMs: API_DB_CONNECT_MS, queryMs: params.config.apiDbTimeoutMs });
  const { surfaces = [], priceCacheMs, ...rest } = params;
  // Payers' transaction proofs, refund completion and fiat prices read the chains with the
  // configured RPC URLs (read only; the ingest role stores transfers), one client per chain made on first use.
  const lookups = params.lookups ?? createTransactionLookups({ config: params.config, logger: params.logger, metrics: params.metrics });
  const deps: ApiDeps = {
    ...rest,
    store,
    startedAt: params.startedAt ?? new Date(),
    lookups,
    pricing: { lookups, pegBandBps: params.config.pegBandBps, cache: createFeedCache(priceCacheMs) },
  };
  const limits = { ...DEFAULT_RATE_LIMITS, ...deps.rateLimits };
  const timeouts = deps.config.httpTimeouts;
  const app = Fastify({
    loggerInstance: deps.logger.child({ stage: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT_BYTES,
    // Every answer carries `X-Request-Id` (Stripe's Request-Id): the id the request's log lines
    // carry, which a client library puts into its errors. Never taken from the client, so a log
    // search for it finds this request only.
    requestIdHeader: false,
    genReqId: () => `req_${randomBytes(12).toString('base64url')}`,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A client that trickles or withholds its headers or body is cut off (docs/security.md, "Input
    // and network hardening"); the headers timeout and its check interval are Node's own options.
    requestTimeout: timeouts.requestMs,
    connectionTimeout: timeouts.idleMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    http: nodeServerTimeouts(timeouts),
    // A request cut off by those timeouts, or one that is not HTTP, gets the same `{"error"}` shape.
    clientErrorHandler: answerClientError,
    // The client IP of per-IP rate limits: the socket address unless SVC_TRUST_PROXY names the proxies.
    trustProxy: (deps.config.trustProxy ?? false) as FastifyServerOptions['trustProxy'] & boolean,
    // Response serializers are built on first use (see lazySerializers.ts).
    schemaController: { compilersFactory: { buildSerializer: buildLazySerializer } },
    // Errors fastify raises before routing (an undecodable URL): the same `{"error"}` shape.
    frameworkErrors: (error, _request, reply) => {
      const answer = frameworkErrorAnswer(error);
      (reply as FastifyReply).status(answer.status).send(answer.body);
    },
  });

  // Every error a route, hook or parser throws is answered from its class (src/api/httpErrors.ts).
  // A callback hook, not an async one: no promise per request on the hottest path.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  app.setErrorHandler((error, request, reply) => {
    const answer = errorAnswer(error, { bodyLimitBytes: BODY_LIMIT_BYTES });
    if (answer.log) request.log[answer.log.level]({ msg: answer.log.msg, err: error, method: request.method, url: request.url });
    return reply.status(answer.status).headers(answer.headers).send(answer.body);
  });
  app.setNotFoundHandler(async (request) => {
    throw notFound(`no route for ${request.method} ${request.url.split('?')[0]}`);
  });

  registerValidation(app);
  registerEmptyJsonBody(app);
  registerOpenApi(app);
  registerIpRateLimit(app, { store: deps.store.bounded(IP_LIMIT_DB_LIMITS), limits });
  registerAuth(app, { store: deps.store });
  registerKeyRateLimit(app, { store: deps.store, limits });
  registerIdempotency(app, { store: deps.store });
  for (const prefix of API_PREFIXES) {
    app.register(
      async (scoped) => {
        for (const register of ROUTE_MODULES) register(scoped, deps);
      },
      { prefix },
    );
  }
  app.addHook('onClose', async () => lookups.close());
  for (const surface of surfaces) surface(app, deps);
  app.register(async (root) => {
    // Inside a plugin so @fastify/swagger (loaded first) sees these routes too.
    publicPaymentLinkRoutes(root, deps);
    x402ResourceRoutes(root, deps);
    discoveryRoutes(root, deps);
    // With a dedicated metrics port (SVC_METRICS_PORT) the public API port does not expose them.
    if (deps.config.metricsPort === undefined) {
      root.get('/metrics', { config: { auth: 'none' } }, async (_request, reply) => {
        return reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.metrics());
      });
    }
  });

  return app;
}

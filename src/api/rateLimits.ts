import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, type Sql, type Store } from '../store/index.ts';
import { RateLimitedError } from '../internal/errors.ts';

/**
 * Which budget a route spends: `create` (payment creation: POST /sessions, /payments,
 * /checkout/sessions), `read` (authenticated GETs), `write` (other authenticated writes), or
 * `none` (only the per-IP budget applies).
 */
export type RateLimitClass = 'create' | 'read' | 'write' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    rateLimit?: RateLimitClass;
  }
}

/** Requests per minute. */
export interface RateLimits {
  /** Spec §8: payment creation, per key. */
  create: number;
  /** Spec §8: reads, per key. */
  read: number;
  /** Other writes (refunds, links, wallets), per key; the spec is silent, so reads' budget. */
  write: number;
  /** Spec §8: any endpoint, per client IP address. */
  ip: number;
  /** Public payment-link visits create sessions, so they get the creation budget per IP. */
  publicCreate: number;
}

/** The spec's numbers (§8). */
export const DEFAULT_RATE_LIMITS: RateLimits = { create: 10, read: 30, write: 30, ip: 200, publicCreate: 10 };

/** One window: a minute, the unit of every limit in the spec. */
const WINDOW_SECONDS = 60;

/** Counter rows live two windows; a 1-in-50 chance per request keeps the table small without a timer. */
const CLEANUP_PROBABILITY = 0.02;

interface Hit {
  count: number;
  limit: number;
  resetSeconds: number;
}

const OVERRIDE_COLUMN: Record<'create' | 'read' | 'write', string> = {
  create: 'create_per_minute',
  read: 'read_per_minute',
  write: 'write_per_minute',
};

/**
 * Counts one request in `bucket`'s current window (the database's clock, so every process
 * agrees) and returns the count and the seconds until the window resets. With `merchantId`,
 * an operator override from merchant_rate_limits replaces `limit`.
 */
async function hit(sql: Sql, params: { bucket: string; limit: number; merchantId?: string; klass?: 'create' | 'read' | 'write' }): Promise<Hit> {
  const override =
    params.merchantId && params.klass ? `(SELECT ${OVERRIDE_COLUMN[params.klass]} FROM merchant_rate_limits WHERE merchant_id = $3)` : 'NULL::integer';
  const { rows } = await sql.query<{ count: number; reset_seconds: string; override: number | null }>(
    `WITH hit AS (
       INSERT INTO rate_limit_counters (bucket, window_start, count)
       VALUES ($1, to_timestamp(floor(extract(epoch FROM now()) / $2) * $2), 1)
       ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_counters.count + 1
       RETURNING count, window_start)
     SELECT count, extract(epoch FROM window_start + make_interval(secs => $2) - now())::text AS reset_seconds, ${override} AS override FROM hit`,
    params.merchantId && params.klass ? [params.bucket, WINDOW_SECONDS, params.merchantId] : [params.bucket, WINDOW_SECONDS],
  );
  const row = rows[0]!;
  if (Math.random() < CLEANUP_PROBABILITY) {
    await sql.query(`DELETE FROM rate_limit_counters WHERE window_start < now() - make_interval(secs => $1)`, [2 * WINDOW_SECONDS]).catch(() => {});
  }
  return { count: row.count, limit: row.override ?? params.limit, resetSeconds: Math.max(1, Math.ceil(Number(row.reset_seconds))) };
}

function setHeaders(reply: FastifyReply, result: Hit): void {
  reply.header('RateLimit-Limit', String(result.limit));
  reply.header('RateLimit-Remaining', String(Math.max(0, result.limit - result.count)));
  reply.header('RateLimit-Reset', String(result.resetSeconds));
}

function refuse(result: Hit, what: string): RateLimitedError {
  return new RateLimitedError(`rate limit exceeded: ${result.limit} ${what} per minute; retry in ${result.resetSeconds} s`, {
    retryAfterSeconds: result.resetSeconds,
    limit: result.limit,
  });
}

/** The class of a route: its `config.rateLimit`, else `read` for GET/HEAD and `write` otherwise. */
function rateLimitClassOf(request: FastifyRequest): RateLimitClass {
  return request.routeOptions.config?.rateLimit ?? (request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write');
}

/**
 * Per-IP limiting, before authentication (so key guessing is limited too). Every request counts,
 * including refused ones; the counters live in Postgres so the limits hold across processes.
 */
export function registerIpRateLimit(app: FastifyInstance, params: { store: Store; limits: RateLimits }): void {
  app.addHook('onRequest', async (request, reply) => {
    let result: Hit;
    try {
      result = await hit(params.store, { bucket: `ip:${request.ip}`, limit: params.limits.ip });
    } catch (error) {
      // Unauthenticated routes (health, checkout) answer without the database or report it themselves: fail open.
      if (request.routeOptions.config?.auth === 'none' && isDatabaseUnavailable(error)) return;
      throw error;
    }
    setHeaders(reply, result);
    if (result.count > result.limit) throw refuse(result, 'requests from one IP address');
    if (rateLimitClassOf(request) === 'create' && request.routeOptions.config?.auth === 'none') {
      const visits = await hit(params.store, { bucket: `ip-create:${request.ip}`, limit: params.limits.publicCreate });
      setHeaders(reply, visits);
      if (visits.count > visits.limit) throw refuse(visits, 'payment creations from one IP address');
    }
  });
}

/** Per-key limiting, after authentication; the headers then describe the key's budget. */
export function registerKeyRateLimit(app: FastifyInstance, params: { store: Store; limits: RateLimits }): void {
  app.addHook('onRequest', async (request, reply) => {
    const auth = request.auth;
    const klass = rateLimitClassOf(request);
    if (!auth || klass === 'none') return;
    const result = await hit(params.store, { bucket: `key:${klass}:${auth.keyId}`, limit: params.limits[klass], merchantId: auth.merchantId, klass });
    setHeaders(reply, result);
    if (result.count > result.limit) throw refuse(result, klass === 'create' ? 'payment creations per key' : `${klass}s per key`);
  });
}

/**
 * Raises (or lowers) a merchant's per-key limits; `null` restores a default. For operators
 * (CLI), never exposed over the API.
 */
export async function setMerchantRateLimits(
  sql: Sql,
  params: { merchantId: string; create?: number | null; read?: number | null; write?: number | null },
): Promise<void> {
  await sql.query(
    `INSERT INTO merchant_rate_limits (merchant_id, create_per_minute, read_per_minute, write_per_minute)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (merchant_id) DO UPDATE SET
       create_per_minute = CASE WHEN $5 THEN excluded.create_per_minute ELSE merchant_rate_limits.create_per_minute END,
       read_per_minute = CASE WHEN $6 THEN excluded.read_per_minute ELSE merchant_rate_limits.read_per_minute END,
       write_per_minute = CASE WHEN $7 THEN excluded.write_per_minute ELSE merchant_rate_limits.write_per_minute END,
       updated_at = now()`,
    [
      params.merchantId,
      params.create ?? null,
      params.read ?? null,
      params.write ?? null,
      params.create !== undefined,
      params.read !== undefined,
      params.write !== undefined,
    ],
  );
}

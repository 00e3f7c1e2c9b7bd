import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, type Sql, type Store } from '../store/index.ts';
import { RateLimitedError } from '../internal/errors.ts';

/**
 * Which budget a route spends: `create` (payment creation: POST /sessions, /payments,
 * /checkout/sessions), `read` (authenticated GETs), `write` (other authenticated writes), `chain`
 * (public routes that make the gateway ask a chain's RPC: transaction proofs; per IP, the public
 * creation budget), `dashboard` (the dashboard's pages, forms and assets: a budget per IP of their
 * own instead of the API's), or `none` (only the per-IP budget applies).
 */
export type RateLimitClass = 'create' | 'read' | 'write' | 'chain' | 'dashboard' | 'none';

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
  /** Public payment-link visits create sessions, and payers' transaction proofs call a chain's RPC: each gets this budget per IP (separately). */
  publicCreate: number;
  /**
   * The dashboard, per IP, instead of `ip`: an open payments page polls every 3 s (20 a minute),
   * and a team behind one office address has many open, so the API's 200 would lock them (and
   * any merchant backend behind the same address) out. Sign-in has its own throttle per account.
   */
  dashboardIp: number;
}

/** The spec's numbers (§8). */
export const DEFAULT_RATE_LIMITS: RateLimits = { create: 10, read: 30, write: 30, ip: 200, publicCreate: 10, dashboardIp: 1_200 };

/** One window: a minute, the unit of every limit in the spec. */
const WINDOW_SECONDS = 60;

/** Counter rows live two windows; a 1-in-50 chance per lease keeps the table small without a timer. */
const CLEANUP_PROBABILITY = 0.02;

/**
 * A process takes a budget's requests from the shared counter in leases of this share of the
 * limit, and spends them in memory: one statement per lease, not per request. Below 1,000 per
 * minute a lease is one request (every request counted in Postgres, exactly as across processes);
 * above it, a process may hold up to this share unspent while another is refused (docs/benchmarks.md).
 */
const LEASE_FRACTION = 1 / 1000;

/** Largest lease: at 1,000 requests a second on one budget, one statement a second per process. */
const MAX_LEASE = 1_000;

/** Buckets remembered per process before the ones whose window ended are swept. */
const MAX_BUCKETS = 10_000;

/** One request's answer from a budget. */
export interface RateLimitHit {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

const OVERRIDE_COLUMN: Record<'create' | 'read' | 'write', string> = {
  create: 'create_per_minute',
  read: 'read_per_minute',
  write: 'write_per_minute',
};

/** A request against `bucket`'s budget of `limit` a minute, or the merchant's override of its `klass` budget. */
export interface RateLimitTake {
  bucket: string;
  limit: number;
  merchantId?: string;
  klass?: 'create' | 'read' | 'write';
}

interface Waiter {
  resolve(hit: RateLimitHit): void;
  reject(error: unknown): void;
}

/** This process's view of one bucket's current window. */
interface Bucket {
  /** Local time (ms, performance.now()) at which the window ends, measured from when the lease was sent, so never late. */
  endsAt: number;
  limit: number;
  /** Requests counted in the shared counter, by every process, as of this process's last lease, less what it holds unspent. */
  used: number;
  /** Leased and not yet spent. */
  tokens: number;
  /** The last lease was cut short: the window's budget is spent everywhere, refuse until it ends. */
  exhausted: boolean;
  waiters: Waiter[];
  leasing: boolean;
}

/** Counts requests against per-minute budgets shared by every process on the database. */
export interface RateLimiter {
  take(params: RateLimitTake): Promise<RateLimitHit>;
}

/**
 * Budgets counted in Postgres (rate_limit_counters, an UNLOGGED table since migration 003: its
 * commits never wait for a WAL flush, and a crash empties it), one row per bucket and minute, on
 * the database's clock so every process agrees. Requests are taken from the shared count in leases (see {@link LEASE_FRACTION}):
 * the requests waiting in this process at that moment, or a lease's share when it is larger. The
 * shared count only grows within a window, so the processes together never admit more than the
 * limit; an operator override (merchant_rate_limits) applies from a key's next lease.
 */
export function createRateLimiter(sql: Sql): RateLimiter {
  const buckets = new Map<string, Bucket>();

  const hitOf = (bucket: Bucket, allowed: boolean, now: number): RateLimitHit => ({
    allowed,
    limit: bucket.limit,
    remaining: allowed ? Math.max(0, bucket.limit - bucket.used) : 0,
    resetSeconds: Math.max(1, Math.ceil((bucket.endsAt - now) / 1000)),
  });

  function spend(bucket: Bucket, now: number): RateLimitHit {
    bucket.tokens--;
    bucket.used++;
    return hitOf(bucket, true, now);
  }

  function sweep(now: number): void {
    if (buckets.size < MAX_BUCKETS) return;
    for (const [name, bucket] of buckets) if (bucket.endsAt <= now && !bucket.leasing) buckets.delete(name);
  }

  function lease(bucket: Bucket, params: RateLimitTake): void {
    bucket.leasing = true;
    const waiters = bucket.waiters.splice(0);
    const sentAt = performance.now();
    leaseFrom(sql, params, waiters.length).then(
      (row) => {
        const now = performance.now();
        const granted = Math.min(row.requested, Math.max(0, row.limit - (row.count - row.requested)));
        bucket.leasing = false;
        bucket.endsAt = sentAt + row.resetSeconds * 1000;
        bucket.limit = row.limit;
        bucket.used = row.count - row.requested;
        bucket.tokens = granted;
        bucket.exhausted = granted < row.requested;
        for (const waiter of waiters) waiter.resolve(bucket.tokens > 0 ? spend(bucket, now) : hitOf(bucket, false, now));
        drain(bucket, params, now);
      },
      (error: unknown) => {
        bucket.leasing = false;
        for (const waiter of waiters) waiter.reject(error);
        if (bucket.waiters.length > 0) lease(bucket, params);
      },
    );
  }

  /** Serves requests that arrived during a lease from what it left, or starts the next lease. */
  function drain(bucket: Bucket, params: RateLimitTake, now: number): void {
    while (bucket.waiters.length > 0 && (bucket.tokens > 0 || bucket.exhausted) && now < bucket.endsAt) {
      const waiter = bucket.waiters.shift()!;
      waiter.resolve(bucket.tokens > 0 ? spend(bucket, now) : hitOf(bucket, false, now));
    }
    if (bucket.waiters.length > 0) lease(bucket, params);
  }

  return {
    take(params) {
      const now = performance.now();
      let bucket = buckets.get(params.bucket);
      if (!bucket) {
        sweep(now);
        bucket = { endsAt: 0, limit: params.limit, used: 0, tokens: 0, exhausted: false, waiters: [], leasing: false };
        buckets.set(params.bucket, bucket);
      }
      if (now >= bucket.endsAt) {
        // A new window: what was leased in the last one is void.
        bucket.tokens = 0;
        bucket.exhausted = false;
      }
      if (!bucket.leasing) {
        if (bucket.tokens > 0) return Promise.resolve(spend(bucket, now));
        if (bucket.exhausted) return Promise.resolve(hitOf(bucket, false, now));
      }
      return new Promise<RateLimitHit>((resolve, reject) => {
        bucket.waiters.push({ resolve, reject });
        if (!bucket.leasing) lease(bucket, params);
      });
    },
  };
}

/**
 * Adds `wanted` requests (or a lease's share of the limit, when larger) to `bucket`'s current
 * window and returns the new shared count, what was added, the limit (an operator's override
 * when there is one) and the seconds left in the window.
 */
async function leaseFrom(sql: Sql, params: RateLimitTake, wanted: number): Promise<{ count: number; requested: number; limit: number; resetSeconds: number }> {
  const withOverride = params.merchantId !== undefined && params.klass !== undefined;
  const override = withOverride ? `(SELECT ${OVERRIDE_COLUMN[params.klass!]} FROM merchant_rate_limits WHERE merchant_id = $6)` : 'NULL::integer';
  const { rows } = await sql.query<{ count: number; requested: number; limit: number; reset_seconds: number }>(
    `WITH budget AS (SELECT coalesce(${override}, $2::integer) AS lim),
     wanted AS (SELECT lim, greatest($3::integer, least($4::integer, floor(lim * $5::float8)::integer)) AS n FROM budget),
     hit AS (
       INSERT INTO rate_limit_counters (bucket, window_start, count)
       SELECT $1, to_timestamp(floor(extract(epoch FROM now()) / ${WINDOW_SECONDS}) * ${WINDOW_SECONDS}), n FROM wanted
       ON CONFLICT (bucket, window_start) DO UPDATE SET count = least(rate_limit_counters.count::bigint + excluded.count, 2147483647)::integer
       RETURNING count, window_start)
     SELECT hit.count, wanted.n AS requested, wanted.lim AS limit,
            extract(epoch FROM hit.window_start + make_interval(secs => ${WINDOW_SECONDS}) - now())::float8 AS reset_seconds
       FROM hit, wanted`,
    [params.bucket, params.limit, wanted, MAX_LEASE, LEASE_FRACTION, ...(withOverride ? [params.merchantId] : [])],
  );
  if (Math.random() < CLEANUP_PROBABILITY) {
    // Not awaited: the requests waiting for this lease need not wait for the cleanup too.
    sql.query(`DELETE FROM rate_limit_counters WHERE window_start < now() - make_interval(secs => $1)`, [2 * WINDOW_SECONDS]).catch(() => {});
  }
  const row = rows[0]!;
  return { count: row.count, requested: row.requested, limit: row.limit, resetSeconds: row.reset_seconds };
}

function setHeaders(reply: FastifyReply, result: RateLimitHit): void {
  reply.header('RateLimit-Limit', String(result.limit));
  reply.header('RateLimit-Remaining', String(result.remaining));
  reply.header('RateLimit-Reset', String(result.resetSeconds));
}

function refuse(result: RateLimitHit, what: string): RateLimitedError {
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
 * until the budget is spent (then refusals are answered from memory until the window ends); the
 * counts live in Postgres so the limits hold across processes.
 */
export function registerIpRateLimit(app: FastifyInstance, params: { store: Store; limits: RateLimits }): void {
  const limiter = createRateLimiter(params.store);
  app.addHook('onRequest', async (request, reply) => {
    const dashboard = rateLimitClassOf(request) === 'dashboard';
    let result: RateLimitHit;
    try {
      result = await limiter.take(
        dashboard ? { bucket: `ip-dashboard:${request.ip}`, limit: params.limits.dashboardIp } : { bucket: `ip:${request.ip}`, limit: params.limits.ip },
      );
    } catch (error) {
      // Unauthenticated routes (health, checkout) answer without the database or report it themselves: fail open.
      if (request.routeOptions.config?.auth === 'none' && isDatabaseUnavailable(error)) return;
      throw error;
    }
    setHeaders(reply, result);
    if (!result.allowed) throw refuse(result, 'requests from one IP address');
    // Public routes that create sessions or make the gateway call a chain's RPC cost more than a
    // read: they get the smaller creation budget per IP too (each class its own bucket).
    const klass = rateLimitClassOf(request);
    if ((klass === 'create' || klass === 'chain') && request.routeOptions.config?.auth === 'none') {
      const costly = await limiter.take({ bucket: `ip-${klass}:${request.ip}`, limit: params.limits.publicCreate });
      setHeaders(reply, costly);
      if (!costly.allowed) throw refuse(costly, klass === 'create' ? 'payment creations from one IP address' : 'transaction proofs from one IP address');
    }
  });
}

/** Per-key limiting, after authentication; the headers then describe the key's budget. */
export function registerKeyRateLimit(app: FastifyInstance, params: { store: Store; limits: RateLimits }): void {
  const limiter = createRateLimiter(params.store);
  app.addHook('onRequest', async (request, reply) => {
    const auth = request.auth;
    const klass = rateLimitClassOf(request);
    if (!auth || klass === 'none' || klass === 'chain' || klass === 'dashboard') return;
    const result = await limiter.take({ bucket: `key:${klass}:${auth.keyId}`, limit: params.limits[klass], merchantId: auth.merchantId, klass });
    setHeaders(reply, result);
    if (!result.allowed) throw refuse(result, klass === 'create' ? 'payment creations per key' : `${klass}s per key`);
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

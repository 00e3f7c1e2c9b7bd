import type { FastifyInstance } from 'fastify';
import { readMigrations } from './store/migrate.ts';
import { isUndefinedTable, type Store } from './store/index.ts';
import type { ChainIngestState } from './ingest/index.ts';

/**
 * How long `/ready` waits for a connection and for its one query. Probes time out after a few
 * seconds; a healthy database answers in milliseconds (the same bound as `/health`).
 */
const READY_DB_LIMITS = { connectMs: 1_000, queryMs: 1_000 } as const;

/** What `/ready` answers, on the API port and on the metrics port. */
export interface ReadyReport {
  status: 'ready' | 'not_ready';
  roles: string[];
  database: 'ok' | 'unavailable';
  /**
   * `current`: every migration file of this release is applied and the database has none this
   * release does not know. `pending`: files not applied yet (a restored older backup, or the
   * migrations of this release have not run). `ahead`: the database carries migrations of a
   * newer release (an old process during an upgrade must not serve; docs/operating.md, "Upgrade").
   */
  migrations: { status: 'current' | 'pending' | 'ahead' | 'unknown'; pending: number[]; unknown: number[] };
  /** Ingest role only: each chain's state in this process (leader, standby, retrying, refused, stopped). */
  ingest?: Record<string, ChainIngestState>;
  /** Why the process is not ready; empty when it is. */
  reasons: string[];
}

/** The readiness check of one daemon process (see {@link createReadiness}). */
export interface Readiness {
  check(): Promise<ReadyReport>;
}

/**
 * Readiness per role, for load balancers and orchestrators (liveness stays `/health`):
 * - every role: the database answers within {@link READY_DB_LIMITS}, and its applied migrations are
 *   exactly the files of this release (none pending, none unknown);
 * - every role of the process has started: the daemon answers `/health` as soon as its API (or
 *   metrics port) listens, while the other roles may still be starting (issue 28: the worker's
 *   pg-boss start no longer holds up the API), and those are not ready until they have;
 * - ingest: every chain of this process is `leader` or a standby (`standby`, or `retrying`: it
 *   failed while leading and waits, its lock released). `refused` (wrong chain id or decimals:
 *   a configuration error) and `stopped` are not ready, so a rollout with a bad RPC URL stops
 *   at its first pod instead of replacing the healthy ones.
 */
export function createReadiness(params: {
  store: Store;
  roles: readonly string[];
  ingestStatus?: () => Record<string, ChainIngestState>;
  /** The roles of this process still starting (none when not given). */
  starting?: () => readonly string[];
  migrationsDir?: string;
}): Readiness {
  const store = params.store.bounded(READY_DB_LIMITS);
  // The files do not change while the process runs: read them once.
  const files = readMigrations(params.migrationsDir).map((migration) => migration.version);
  return {
    async check() {
      const reasons: string[] = [];
      let database: ReadyReport['database'] = 'ok';
      const migrations: ReadyReport['migrations'] = { status: 'unknown', pending: [], unknown: [] };
      try {
        const { rows } = await store.query<{ version: number }>('SELECT version FROM schema_migrations');
        const applied = new Set(rows.map((row) => row.version));
        migrations.pending = files.filter((version) => !applied.has(version));
        migrations.unknown = [...applied].filter((version) => !files.includes(version)).sort((a, b) => a - b);
        migrations.status = migrations.unknown.length > 0 ? 'ahead' : migrations.pending.length > 0 ? 'pending' : 'current';
        if (migrations.pending.length > 0) reasons.push(`migrations not applied: ${migrations.pending.join(', ')} (run svc migrate)`);
        if (migrations.unknown.length > 0)
          reasons.push(`the database has migrations this release does not know: ${migrations.unknown.join(', ')} (a newer release migrated it)`);
      } catch (error) {
        // A database without schema_migrations yet (42P01) answers, but nothing is migrated.
        if (isUndefinedTable(error)) {
          migrations.status = 'pending';
          migrations.pending = files;
          reasons.push('migrations not applied: the database has no schema_migrations table (run svc migrate)');
        } else {
          database = 'unavailable';
          reasons.push('database unreachable or not answering within 1 s');
        }
      }
      for (const role of params.starting?.() ?? []) reasons.push(`the ${role} role is still starting`);
      let ingest: ReadyReport['ingest'];
      if (params.ingestStatus) {
        ingest = params.ingestStatus();
        for (const [chain, state] of Object.entries(ingest)) {
          if (state.state === 'refused') reasons.push(`${chain}: the ingester refuses to run: ${state.error}`);
          if (state.state === 'stopped') reasons.push(`${chain}: the ingester is stopped`);
        }
      }
      return {
        status: reasons.length === 0 ? 'ready' : 'not_ready',
        roles: [...params.roles],
        database,
        migrations,
        ...(ingest ? { ingest } : {}),
        reasons,
      };
    },
  };
}

/** Answers a readiness report over HTTP: 200 when ready, 503 with the reasons when not. */
export async function readyResponse(readiness: Readiness): Promise<{ status: number; body: ReadyReport }> {
  const report = await readiness.check();
  return { status: report.status === 'ready' ? 200 : 503, body: report };
}

/**
 * `GET /ready` on the API server, at the root beside `/metrics` (an operator endpoint, not part
 * of the merchant API under `/api/v1`, so hidden from the OpenAPI document). No key needed.
 */
export function registerReadyRoute(app: FastifyInstance, readiness: Readiness): void {
  app.get('/ready', { config: { auth: 'none', rateLimit: 'none' }, schema: { hide: true } }, async (_request, reply) => {
    const { status, body } = await readyResponse(readiness);
    return reply.status(status).send(body);
  });
}

/**
 * `/health` on the metrics port, for processes without the api role: the same answer as the
 * API's `GET /api/v1/health` (200 when the database answers, 503 when not or not in time), so a
 * liveness probe means the same thing on every role.
 */
export async function healthResponse(store: Store, startedAt: Date): Promise<{ status: number; body: unknown }> {
  const database = await store
    .bounded(READY_DB_LIMITS)
    .query('SELECT 1')
    .then(() => 'ok' as const)
    .catch(() => 'unavailable' as const);
  return {
    status: database === 'ok' ? 200 : 503,
    body: { status: database === 'ok' ? 'healthy' : 'unhealthy', database, uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000) },
  };
}

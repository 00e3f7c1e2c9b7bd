import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.ts';

/**
 * How long `/health` waits for a connection and for `SELECT 1`. Load balancers and orchestrators
 * probe with timeouts of a few seconds; answering 503 within ~2 s (this wait plus the per-IP
 * limit's, see IP_LIMIT_DB_LIMITS) lets them see "unhealthy" instead of their own timeout, and a
 * healthy database answers in milliseconds.
 */
export const HEALTH_DB_LIMITS = { connectMs: 1_000, queryMs: 1_000 } as const;

/** `GET /health` (spec §4.1): no authentication; 200 when the database answers, 503 when not (or not in time). */
export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const store = deps.store.bounded(HEALTH_DB_LIMITS);
  app.get('/health', { config: { auth: 'none' } }, async (_request, reply) => {
    const database = await store
      .query('SELECT 1')
      .then(() => 'ok' as const)
      .catch(() => 'unavailable' as const);
    return reply.status(database === 'ok' ? 200 : 503).send({
      status: database === 'ok' ? 'healthy' : 'unhealthy',
      database,
      uptimeSeconds: Math.floor((Date.now() - deps.startedAt.getTime()) / 1000),
    });
  });
}

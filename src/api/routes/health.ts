import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.ts';

/** `GET /health` (spec §4.1): no authentication; 200 when the database answers, 503 when not. */
export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  app.get('/health', { config: { auth: 'none' } }, async (_request, reply) => {
    const database = await deps.store
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

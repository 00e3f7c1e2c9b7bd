import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { ApiDeps } from '../deps.ts';
import { errorResponses } from '../schemas.ts';

/**
 * How long `/health` waits for a connection and for `SELECT 1`. Load balancers and orchestrators
 * probe with timeouts of a few seconds; answering 503 within ~2 s (this wait plus the per-IP
 * limit's, see IP_LIMIT_DB_LIMITS) lets them see "unhealthy" instead of their own timeout, and a
 * healthy database answers in milliseconds.
 */
export const HEALTH_DB_LIMITS = { connectMs: 1_000, queryMs: 1_000 } as const;

const HealthSchema = (status: 'healthy' | 'unhealthy', database: 'ok' | 'unavailable', description: string) =>
  Type.Object(
    {
      status: Type.Literal(status),
      database: Type.Literal(database),
      uptimeSeconds: Type.Integer({ minimum: 0, description: 'Seconds since this process started.' }),
    },
    { additionalProperties: false, description },
  );

/** `GET /health` (spec §4.1): no authentication; 200 when the database answers, 503 when not (or not in time). */
export function healthRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const store = deps.store.bounded(HEALTH_DB_LIMITS);
  app.get(
    '/health',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['Interface A'],
        summary: 'Health check (no authentication)',
        description:
          'For load balancers and orchestrators: 200 when this process answers and its database does, 503 when the database does not (within about 2 s).',
        response: {
          200: HealthSchema('healthy', 'ok', 'Healthy.'),
          503: HealthSchema('unhealthy', 'unavailable', 'The database does not answer.'),
          ...errorResponses(429),
        },
      },
    },
    async (_request, reply) => {
      const database = await store
        .query('SELECT 1')
        .then(() => 'ok' as const)
        .catch(() => 'unavailable' as const);
      return reply.status(database === 'ok' ? 200 : 503).send({
        status: database === 'ok' ? 'healthy' : 'unhealthy',
        database,
        uptimeSeconds: Math.floor((Date.now() - deps.startedAt.getTime()) / 1000),
      });
    },
  );
}

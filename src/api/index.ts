import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { HttpError } from '../internal/errors.ts';
import { registerAuth } from './auth.ts';
import type { ApiDeps } from './deps.ts';
import { healthRoutes } from './routes/health.ts';

export type { ApiDeps };

/** Route modules, each registering its routes relative to the API prefix. */
const ROUTE_MODULES: ((app: FastifyInstance, deps: ApiDeps) => void)[] = [healthRoutes];

/** The spec's base path is `/api/v1`; one listing writes `/v1`. Both serve the same routes. */
export const API_PREFIXES = ['/api/v1', '/v1'] as const;

/**
 * The HTTP layer: Interface A and Interface B under `/api/v1` (and `/v1`), plus `/metrics`. It
 * reads and writes payment state in Postgres and never talks to a chain. A fastify instance, so
 * tests drive it in process with `inject` or over a real socket with `listen`.
 */
export function createApi(params: Omit<ApiDeps, 'startedAt'> & { startedAt?: Date }): FastifyInstance {
  const deps: ApiDeps = { ...params, startedAt: params.startedAt ?? new Date() };
  const app = Fastify({
    loggerInstance: deps.logger.child({ stage: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // 64 KiB is far above any valid request (metadata is capped well below it).
    bodyLimit: 64 * 1024,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof HttpError) {
      return reply.status(error.status).headers(error.headers).send({ error: error.shortMessage });
    }
    const status = (error as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      return reply.status(status).send({ error: (error as Error).message });
    }
    request.log.error({ msg: 'Unhandled error in request', err: error, method: request.method, url: request.url });
    return reply.status(500).send({ error: 'internal server error' });
  });
  app.setNotFoundHandler((request, reply) => reply.status(404).send({ error: `no route for ${request.method} ${request.url.split('?')[0]}` }));

  registerAuth(app, { store: deps.store });
  for (const prefix of API_PREFIXES) {
    app.register(
      async (scoped) => {
        for (const register of ROUTE_MODULES) register(scoped, deps);
      },
      { prefix },
    );
  }

  app.get('/metrics', { config: { auth: 'none' } }, async (_request, reply) => {
    return reply.header('content-type', deps.metrics.contentType).send(await deps.metrics.metrics());
  });

  return app;
}

import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import type { Store } from '../store/index.ts';
import type { Logger } from '../internal/logger.ts';
import { HttpError } from '../internal/errors.ts';

export interface ApiParams {
  store: Store;
  logger: Logger;
  metrics: Registry;
  /** Process start, for `/health`'s uptime. */
  startedAt?: Date;
}

/**
 * The HTTP layer: Interface A and Interface B under `/api/v1` (and `/v1`), health and metrics.
 * It reads and writes payment state in Postgres and never talks to a chain. Built as a fastify
 * instance so tests drive it in process with `inject` or over a real socket with `listen`.
 */
export function createApi(params: ApiParams): FastifyInstance {
  const startedAt = params.startedAt ?? new Date();
  const app = Fastify({
    loggerInstance: params.logger.child({ stage: 'api' }) as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // 64 KiB is far above any valid request (metadata is capped well below it).
    bodyLimit: 64 * 1024,
    // Fastify drains in-flight requests on close; this bounds how long a stuck client can hold shutdown.
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

  for (const prefix of ['/api/v1', '/v1']) {
    app.get(`${prefix}/health`, async (_request, reply) => {
      const database = await params.store
        .query('SELECT 1')
        .then(() => 'ok' as const)
        .catch(() => 'unavailable' as const);
      return reply.status(database === 'ok' ? 200 : 503).send({
        status: database === 'ok' ? 'healthy' : 'unhealthy',
        database,
        uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000),
      });
    });
  }

  app.get('/metrics', async (_request, reply) => {
    return reply.header('content-type', params.metrics.contentType).send(await params.metrics.metrics());
  });

  return app;
}

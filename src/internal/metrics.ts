import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { DEFAULT_HTTP_TIMEOUTS, nodeServerTimeouts, type HttpTimeouts } from './httpTimeouts.ts';
import { answerClientError } from './httpClientErrors.ts';

/**
 * One Prometheus registry per daemon (not prom-client's global one), so tests can run several
 * daemons in one process. Stages register their own metrics on it, named `svc_<stage>_…`.
 */
export function createMetricsRegistry(params: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (params.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'svc_' });
  return registry;
}

export type { Registry };

/** An extra JSON route of the metrics listener (`/ready`, `/health`): its status code and body. */
export type MetricsPortRoute = () => Promise<{ status: number; body: unknown }>;

/**
 * A bare `/metrics` listener, for processes that run without the api role (an ingest-only or
 * worker-only process has metrics too). The api role also serves `/metrics` on its own port.
 * `routes` adds JSON GET routes (the daemon's `/ready` and `/health`), so probes reach every role.
 * It cuts slow clients off like the API (`timeouts`: the daemon passes `config.httpTimeouts`, the
 * defaults otherwise), not after Node's own 60 s and 300 s, and answers them `{"error"}` too.
 */
export async function serveMetrics(params: {
  registry: Registry;
  host: string;
  port: number;
  routes?: Record<string, MetricsPortRoute>;
  timeouts?: HttpTimeouts;
}): Promise<{ url: string; close(): Promise<void> }> {
  const timeouts = params.timeouts ?? DEFAULT_HTTP_TIMEOUTS;
  const server = http.createServer(nodeServerTimeouts(timeouts), async (request, response) => {
    const path = request.url?.split('?')[0] ?? '';
    const route = request.method === 'GET' && params.routes && Object.hasOwn(params.routes, path) ? params.routes[path] : undefined;
    if (route) {
      const answer = await route().catch(() => ({ status: 500, body: { error: 'check failed' } }));
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
      return;
    }
    if (request.method !== 'GET' || path !== '/metrics') {
      const extra = Object.keys(params.routes ?? {});
      const error = extra.length === 0 ? 'only GET /metrics is served here' : `only GET ${['/metrics', ...extra].join(', ')} are served here`;
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error }));
      return;
    }
    try {
      const body = await params.registry.metrics();
      response.writeHead(200, { 'content-type': params.registry.contentType }).end(body);
    } catch {
      response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'metrics collection failed' }));
    }
  });
  // Without a 'timeout' listener, Node destroys a socket idle this long (fastify's connectionTimeout does the same).
  server.setTimeout(timeouts.idleMs);
  server.keepAliveTimeout = timeouts.keepAliveMs;
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(params.port, params.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${params.host.includes(':') ? `[${params.host}]` : params.host}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

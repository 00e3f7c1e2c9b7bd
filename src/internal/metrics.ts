import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry, collectDefaultMetrics } from 'prom-client';

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

/**
 * A bare `/metrics` listener, for processes that run without the api role (an ingest-only or
 * worker-only process has metrics too). The api role also serves `/metrics` on its own port.
 */
export async function serveMetrics(params: { registry: Registry; host: string; port: number }): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer(async (request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'only GET /metrics is served here' }));
      return;
    }
    try {
      const body = await params.registry.metrics();
      response.writeHead(200, { 'content-type': params.registry.contentType }).end(body);
    } catch {
      response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'metrics collection failed' }));
    }
  });
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

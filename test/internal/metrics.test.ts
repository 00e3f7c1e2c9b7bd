import { describe, expect, test } from 'vitest';
import { Counter } from 'prom-client';
import { createMetricsRegistry, serveMetrics } from '../../src/internal/metrics.ts';
import { useTestDatabase } from '../helpers/db.ts';

const db = useTestDatabase('metrics');

describe('serveMetrics()', () => {
  test('serves the registry at GET /metrics and nothing else', async () => {
    const registry = createMetricsRegistry({ defaultMetrics: false });
    new Counter({ name: 'svc_test_things_total', help: 'things', registers: [registry] }).inc(3);
    const server = await serveMetrics({ registry, host: '127.0.0.1', port: 0 });
    try {
      const metrics = await fetch(`${server.url}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toContain('text/plain');
      expect(await metrics.text()).toContain('svc_test_things_total 3');
      const other = await fetch(`${server.url}/`);
      expect(other.status).toBe(404);
      expect(await other.json()).toEqual({ error: 'only GET /metrics is served here' });
    } finally {
      await server.close();
    }
  });
});

describe('/metrics on the API port', () => {
  test('served without a key by default; not served there once SVC_METRICS_PORT names a dedicated port', async () => {
    const { createApi } = await import('../../src/api/index.ts');
    const { loadConfig } = await import('../../src/internal/config.ts');
    const { createLogger } = await import('../../src/internal/logger.ts');
    const { createSecretBox } = await import('../../src/internal/crypto.ts');
    const store = db.store;
    const build = (env: Record<string, string>) =>
      createApi({ store, logger: createLogger({ level: 'silent' }), metrics: createMetricsRegistry({ defaultMetrics: false }), config: loadConfig(env), box: createSecretBox(Buffer.alloc(32)) });
    const open = build({});
    const closed = build({ SVC_METRICS_PORT: '9464' });
    try {
      expect((await open.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
      expect((await closed.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    } finally {
      await Promise.all([open.close(), closed.close()]);
    }
  });
});
